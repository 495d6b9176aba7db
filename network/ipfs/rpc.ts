import { Readable } from 'node:stream'
import Koa from 'koa'
import { IpfsError, errorMessage, isClientGone, kuboError } from './errors.js'
import type { PeerIdentity } from './identity.js'
import { parseIpfsPath } from './ipfs-path.js'
import { localOnly } from './local-only.js'
import type { FileEntry } from './read-file.js'
import { add } from './rpc-add.js'
import type { ContentStore } from './store.js'

export const AGENT_VERSION = 'parley-ipfs/0.1.0'

export interface RpcDeps {
  store: ContentStore
  identity: PeerIdentity
  log: (line: string) => void
  /** The interface the API is bound to, accepted in the Host header besides loopback names. */
  host: string
}

export type Handler = (ctx: Koa.Context, deps: RpcDeps) => Promise<void>

function parseNonNegative(name: string, v: string | null): bigint | undefined {
  if (v === null || v === '') return undefined
  if (/^-\d+$/.test(v)) throw new IpfsError('bad-request', `cannot specify negative ${name}`)
  if (!/^\d+$/.test(v)) throw new IpfsError('bad-request', `invalid value "${v}" for option "${name}": expected an integer`)
  return BigInt(v)
}

/** `cat`: one or more paths, concatenated, with `offset`/`length` applied to the whole, streamed. */
const cat: Handler = async (ctx, { store }) => {
  const q = ctx.URL.searchParams
  const args = q.getAll('arg')
  if (args.length === 0) throw new IpfsError('bad-request', 'argument "ipfs-path" is required')
  const offset = parseNonNegative('offset', q.get('offset')) ?? 0n
  const length = parseNonNegative('length', q.get('length'))
  // Every path is resolved before answering: an unknown or malformed CID fails here, with a status.
  const files: FileEntry[] = []
  for (const arg of args) files.push(await store.resolveFile(parseIpfsPath(arg)))
  const total = files.reduce((sum, f) => sum + f.size, 0n)
  const from = offset < total ? offset : total
  const count = length === undefined || from + length > total ? total - from : length
  async function* body(): AsyncGenerator<Uint8Array> {
    let skip = from
    let left = count
    for (const f of files) {
      if (left <= 0n) return
      if (skip >= f.size) {
        skip -= f.size
        continue
      }
      const take = f.size - skip < left ? f.size - skip : left
      yield* store.read(f, skip, take)
      skip = 0n
      left -= take
    }
  }
  ctx.status = 200
  ctx.type = 'text/plain'
  ctx.set('X-Stream-Output', '1')
  ctx.set('X-Content-Length', count.toString())
  ctx.body = Readable.from(body(), { objectMode: false })
}

const version: Handler = async (ctx) => {
  ctx.body = {
    Version: '0.1.0-parley',
    Commit: '',
    Repo: '1',
    System: `${process.arch}/${process.platform}`,
    Golang: `none (Node.js ${process.version})`,
  }
}

const id: Handler = async (ctx, { identity }) => {
  const arg = ctx.URL.searchParams.get('arg')
  if (arg && arg !== identity.id) {
    throw new IpfsError('not-found', `cannot look up peer ${arg}: this IPFS is offline and knows only itself`)
  }
  ctx.body = {
    ID: identity.id,
    PublicKey: identity.publicKey,
    // No swarm: the content is reachable only through this API and the gateway.
    Addresses: [],
    AgentVersion: AGENT_VERSION,
    ProtocolVersion: 'ipfs/0.1.0',
    Protocols: [],
  }
}

const handlers: Record<string, Handler> = { add, cat, version, id }

/** The Kubo RPC subset, all POST as kubo-rpc-client sends it, with Kubo's error shape for every failure. */
export function createRpcApp(deps: RpcDeps): Koa {
  const app = new Koa()
  // Errors that surface after the answer began; a client that simply went away is not worth a line.
  app.on('error', (err: unknown) => {
    if (!isClientGone(err)) deps.log(`ipfs api: ${errorMessage(err)}`)
  })
  app.use(localOnly(deps.host))
  app.use(async (ctx, next) => {
    try {
      await next()
    } catch (err) {
      const { status, body } = kuboError(err)
      if (status >= 500 && !(err instanceof IpfsError)) deps.log(`ipfs api: ${ctx.path}: ${errorMessage(err)}`)
      ctx.status = status
      ctx.body = body
      // An upload we stopped reading must still be drained, or the client may never read this answer.
      if (!ctx.req.readableEnded) ctx.req.resume()
    }
  })
  app.use(async (ctx) => {
    const handler = ctx.path.startsWith('/api/v0/') ? handlers[ctx.path.slice('/api/v0/'.length)] : undefined
    if (!handler) {
      ctx.status = 404
      ctx.body = '404 page not found'
      return
    }
    if (ctx.method !== 'POST') {
      ctx.status = 405
      ctx.set('Allow', 'POST')
      ctx.body = { Message: `${ctx.method} is not allowed: the RPC API takes POST only`, Code: 0, Type: 'error' }
      return
    }
    await handler(ctx, deps)
  })
  return app
}
