import http from 'node:http'
import { ParleyError } from '../core/errors.js'
import type { Duplex } from 'node:stream'
import Koa from 'koa'
import { ApiRouter } from './router.js'
import { errorMiddleware } from './errors.js'
import { statusRoutes } from './routes/status.js'
import { blockchainEventRoutes } from './routes/blockchain-events.js'
import { messageRoutes } from './routes/messages.js'
import { networkRoutes } from './routes/network.js'
import { eventRoutes } from './routes/events.js'
import { dataRoutes } from './routes/data.js'
import { datatypeRoutes } from './routes/datatypes.js'
import type { NodeServices } from '../services.js'
import { closeServer, listen } from '../core/listen.js'

export interface ApiServer {
  url: string
  close(): Promise<void>
}

/** The member's REST API on its own port: every route under /api/v1, errors as `{"error": "<CODE>: <message>"}`. */
export async function startApiServer(opts: { host: string; port: number; services: NodeServices; log: (line: string) => void }): Promise<ApiServer> {
  const app = new Koa()
  app.proxy = false
  // Koa's default would print stack traces to stderr for every 4xx; errorMiddleware already answers and logs.
  app.silent = true
  app.use(errorMiddleware(opts.log))

  const api = new ApiRouter(opts.services)
  statusRoutes(api)
  blockchainEventRoutes(api)
  messageRoutes(api)
  networkRoutes(api)
  eventRoutes(api)
  dataRoutes(api)
  datatypeRoutes(api)
  app.use(api.router.routes())
  app.use(api.router.allowedMethods({ throw: true }))

  const server = http.createServer(app.callback())
  // Slow clients must not pin sockets forever; large uploads still stream (the timeouts bound idleness, not size).
  server.headersTimeout = 60_000
  server.requestTimeout = 0
  server.keepAliveTimeout = 5_000
  // A client that stops sending mid-upload (or stops reading a download) must not hold its socket forever; longer
  // than the longest ?confirm=true wait, during which the socket is legitimately quiet.
  server.timeout = 300_000
  server.on('clientError', answerClientError)
  await listen(server, opts.port, opts.host)
  return {
    url: `http://${opts.host}:${opts.port}`,
    close: () => closeServer(server),
  }
}

/**
 * What Node's HTTP parser refuses before any route sees it (oversize headers, a malformed request line) is answered
 * like every other refusal, with a status and the JSON error body, where the socket can still take an answer.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const [status, reason, code] = err.code === 'HPE_HEADER_OVERFLOW' ? ([431, 'Request Header Fields Too Large', 'PAYLOAD_TOO_LARGE'] as const) : ([400, 'Bad Request', 'BAD_REQUEST'] as const)
  const detail = err.code === 'HPE_HEADER_OVERFLOW' ? 'the request headers are larger than this node accepts' : `the request is not valid HTTP (${err.code ?? 'unparsable'})`
  const body = JSON.stringify(new ParleyError(code, detail).toJSON())
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
}
