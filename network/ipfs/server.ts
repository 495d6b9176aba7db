import { createServer, type Server } from 'node:http'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type Koa from 'koa'
import { PortBusyError } from '../process.js'
import { createGatewayApp } from './gateway.js'
import { loadOrCreateIdentity } from './identity.js'
import { createRpcApp } from './rpc.js'
import { ContentStore } from './store.js'

export interface IpfsOptions {
  /** State folder: `<dir>/blocks` holds the blocks, `<dir>/identity.json` the peer identity. */
  dir: string
  apiPort: number
  gatewayPort: number
  /** Interface to bind; loopback by default, because the RPC API has no authentication (neither has Kubo's). */
  host?: string
  /** Where error lines go (default: stderr). */
  log?: (line: string) => void
}

export interface IpfsServer {
  api: string
  gateway: string
  close(): Promise<void>
}

/** How long close() lets in-flight requests finish before cutting their connections. */
const CLOSE_GRACE_MS = 2000

function listen(app: Koa, port: number, host: string, purpose: string): Promise<Server> {
  const server = createServer(app.callback())
  // Uploads of large files take as long as they take; the default 5-minute whole-request limit would cut them.
  server.requestTimeout = 0
  return new Promise((res, rej) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      rej(err.code === 'EADDRINUSE' || err.code === 'EACCES' ? new PortBusyError(port, purpose, host) : err)
    })
    server.listen(port, host, () => res(server))
  })
}

function closeServer(server: Server): Promise<void> {
  return new Promise((res) => {
    const timer = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS)
    server.close(() => {
      clearTimeout(timer)
      res()
    })
    server.closeIdleConnections()
  })
}

function urlOf(server: Server, host: string): string {
  const addr = server.address()
  const port = typeof addr === 'object' && addr ? addr.port : 0
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`
}

/** Starts the Kubo RPC subset and the read-only gateway over one content store. */
export async function startIpfs(opts: IpfsOptions): Promise<IpfsServer> {
  const host = opts.host ?? '127.0.0.1'
  const log = opts.log ?? ((line: string) => console.error(line))
  await mkdir(opts.dir, { recursive: true })
  const store = await ContentStore.open(join(opts.dir, 'blocks'))
  const identity = await loadOrCreateIdentity(opts.dir)

  const rpc = createRpcApp({ store, identity, log, host })
  const gateway = createGatewayApp({ store, log })

  const apiServer = await listen(rpc, opts.apiPort, host, 'ipfs api').catch(async (err: unknown) => {
    await store.close()
    throw err
  })
  const gatewayServer = await listen(gateway, opts.gatewayPort, host, 'ipfs gateway').catch(async (err: unknown) => {
    await closeServer(apiServer)
    await store.close()
    throw err
  })
  let closing: Promise<void> | undefined
  return {
    api: urlOf(apiServer, host),
    gateway: urlOf(gatewayServer, host),
    close() {
      closing ??= Promise.all([closeServer(apiServer), closeServer(gatewayServer)]).then(() => store.close())
      return closing
    },
  }
}
