import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A request the scripted server received, its JSON body parsed (the text when it is not JSON). */
export interface ScriptedRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
  body: unknown
}

/** What to answer: an object is sent as JSON, a string as it is; `hang` never answers (a paused peer). */
export type ScriptedReply = { status: number; body?: unknown } | 'hang'

export interface ScriptedServer {
  /** `http://127.0.0.1:<port>` */
  url: string
  requests: ScriptedRequest[]
  /** Replaces how the server answers from now on. */
  answer(script: (req: ScriptedRequest) => ScriptedReply): void
  close(): Promise<void>
}

/**
 * A real HTTP server on loopback that answers as the test tells it: a member's API or a chain's JSON-RPC that says
 * something malformed, refuses, or never answers, for the modules that read them (network/controls, verify, trace).
 */
export async function scriptedServer(script: (req: ScriptedRequest) => ScriptedReply = () => ({ status: 200, body: {} })): Promise<ScriptedServer> {
  let current = script
  const requests: ScriptedRequest[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8')
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
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    answer: (s) => {
      current = s
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** A JSON-RPC reply carrying `result`, for the request `r`. */
export const rpcResult = (r: ScriptedRequest, result: unknown): ScriptedReply => ({ status: 200, body: { jsonrpc: '2.0', id: (r.body as { id?: number }).id ?? 1, result } })

/** The JSON-RPC method of a request to a scripted chain. */
export const rpcMethod = (r: ScriptedRequest): string => (r.body as { method?: string }).method ?? ''
