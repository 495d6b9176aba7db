import http from 'node:http'
import { connect, type Socket } from 'node:net'
import { startApiServer, type ApiServer } from '../../node/api/server.js'
import { ParleyError } from '../../node/core/errors.js'
import type { RequestLimits } from '../../node/core/limits.js'
import type { NodeServices } from '../../node/services.js'
import { freePort } from '../../network/process.js'

/** The data route: a JSON body read whole reaches the uploader, which answers 400 `INVALID_FIELD: reached`. */
export const DATA_PATH = '/api/v1/namespaces/default/data'

export interface LimitsServer {
  port: number
  /** Lines the server logged (a 5xx logs one). */
  logs: string[]
  /** Sockets opened through `socket()`, destroyed by `close()`. */
  sockets: Socket[]
  /** Requests whose value `{"hold": true, ...}` is waiting for the gate `hold()` closed. */
  readonly holding: number
  /** Closes the gate: from now on a value with `"hold": true` waits; the function returned opens it. */
  hold(): () => void
  /** The head of a POST to the data route declaring `length` bytes of JSON, or a chunked body. */
  postHead(length: number | 'chunked'): string
  /** A raw connection to the server, from `localAddress` when given (any 127.x.y.z reaches it). */
  socket(localAddress?: string): Promise<Socket>
  /** A POST of `body` to the data route (or `path`) on a connection of its own: its status and error text. */
  post(body: string | Buffer, opts?: { localAddress?: string; headers?: Record<string, string>; path?: string }): Promise<{ status: number; error: string; headers: http.IncomingHttpHeaders }>
  close(): Promise<void>
}

/**
 * The member's real API server with `limits` and an uploader that only says it was reached: what the server's
 * connection handling and body reading do, over real sockets, without a node behind it.
 */
export async function startLimitsServer(limits: RequestLimits): Promise<LimitsServer> {
  const reached = (): never => {
    throw new ParleyError('INVALID_FIELD', 'reached')
  }
  let gate: Promise<void> | undefined
  let holding = 0
  const uploadValue = async (_ns: string, body: { get(k: string): unknown }): Promise<never> => {
    if (body.get('hold') && gate) {
      holding++
      await gate
      holding--
    }
    return reached()
  }
  const services = { config: { limits }, uploader: { uploadValue, uploadBlob: reached } } as unknown as NodeServices
  const port = await freePort()
  const logs: string[] = []
  const api: ApiServer = await startApiServer({ host: '127.0.0.1', port, services, log: (l) => logs.push(l) })
  const sockets: Socket[] = []
  return {
    port,
    logs,
    sockets,
    get holding() {
      return holding
    },
    hold() {
      let open!: () => void
      gate = new Promise<void>((r) => (open = r))
      return () => {
        gate = undefined
        open()
      }
    },
    postHead(length) {
      const framing = length === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`
      return `POST ${DATA_PATH} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`
    },
    async socket(localAddress) {
      const s = connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) })
      sockets.push(s)
      s.on('error', () => {})
      await new Promise((r) => s.once('connect', r))
      return s
    },
    post(body, opts = {}) {
      return new Promise((resolve, reject) => {
        const headers = { 'content-type': 'application/json', ...opts.headers }
        const req = http.request({ host: '127.0.0.1', port, agent: false, method: 'POST', path: opts.path ?? DATA_PATH, headers, ...(opts.localAddress ? { localAddress: opts.localAddress } : {}) }, (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8')
            resolve({ status: res.statusCode ?? 0, error: (JSON.parse(text) as { error: string }).error, headers: res.headers })
          })
        })
        req.on('error', reject)
        req.end(body)
      })
    },
    async close() {
      for (const s of sockets) s.destroy()
      await api.close()
    },
  }
}

/** Everything `socket` receives until it closes or `until` matches it (the text so far). */
export function readUntil(socket: Socket, until: (text: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    const done = (): void => {
      socket.off('data', onData)
      resolve(text)
    }
    const onData = (c: Buffer): void => {
      text += c.toString('utf8')
      if (until(text)) done()
    }
    socket.on('data', onData)
    socket.once('close', done)
  })
}
