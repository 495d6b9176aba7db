import http, { type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { closeServer } from '../../node/core/listen.js'

/**
 * A plain HTTP server on 127.0.0.1, on a port the system picks, that answers as the test says: an endpoint that a
 * client under test talks to (Kubo's RPC API, a gateway) playing its part, healthy or not. `handler` may be swapped
 * between requests; `stop` drops open connections and closes it.
 */
export class ScriptedServer {
  handler: http.RequestListener = (_req, res) => res.end()
  /** Requests received, by URL, in order. */
  readonly requests: string[] = []
  private constructor(
    /** The server itself, for what else a test serves at the same address (a WebSocket upgrade). */
    readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<ScriptedServer> {
    let self: ScriptedServer | undefined
    const server = http.createServer((req, res) => {
      self!.requests.push(req.url ?? '')
      self!.handler(req, res)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    self = new ScriptedServer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    return self
  }

  stop(): Promise<void> {
    return closeServer(this.server)
  }
}

/** A request's body, whole. */
export async function bodyOf(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}

/** A request a scripted endpoint received, its JSON body parsed (the text when it is not JSON). */
export interface ScriptedRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
  body: unknown
}

/** What to answer: an object is sent as JSON, a string as it is; `hang` never answers (a paused peer). */
export type ScriptedReply = { status: number; body?: unknown } | 'hang'

/** A ScriptedServer that answers each request, body read and parsed, with what a script returns. */
export interface ScriptedEndpoint {
  /** `http://127.0.0.1:<port>` */
  url: string
  requests: ScriptedRequest[]
  /** Replaces how the endpoint answers from now on. */
  answer(script: (req: ScriptedRequest) => ScriptedReply): void
  close(): Promise<void>
}

/**
 * An endpoint whose answers a test scripts by request: a member's API or a chain's JSON-RPC that says something
 * malformed, refuses, or never answers, for the modules that read them (network/controls, verify, trace).
 */
export async function scriptedEndpoint(script: (req: ScriptedRequest) => ScriptedReply = () => ({ status: 200, body: {} })): Promise<ScriptedEndpoint> {
  let current = script
  const requests: ScriptedRequest[] = []
  const server = await ScriptedServer.start()
  server.handler = (req, res) => {
    void bodyOf(req).then((bytes) => {
      const text = bytes.toString('utf8')
      let body: unknown = text === '' ? undefined : text
      try {
        body = text === '' ? undefined : JSON.parse(text)
      } catch {
        // not JSON: kept as text
      }
      const r: ScriptedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body }
      requests.push(r)
      const reply = current(r)
      if (reply === 'hang') return
      const payload = reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body)
      // A connection per request: a client's kept-alive socket to a server a test closed would fail otherwise than refused.
      res.writeHead(reply.status, { 'content-type': typeof reply.body === 'string' ? 'text/plain' : 'application/json', connection: 'close' })
      res.end(payload)
    })
  }
  return {
    url: server.url,
    requests,
    answer: (s) => {
      current = s
    },
    close: () => server.stop(),
  }
}

/** A JSON-RPC reply carrying `result`, for the request `r`. */
export const rpcResult = (r: ScriptedRequest, result: unknown): ScriptedReply => ({ status: 200, body: { jsonrpc: '2.0', id: (r.body as { id?: number }).id ?? 1, result } })

/** The JSON-RPC method of a request to a scripted chain. */
export const rpcMethod = (r: ScriptedRequest): string => (r.body as { method?: string }).method ?? ''
