import http from 'node:http'
import { ParleyError } from '../core/errors.js'
import type { Duplex } from 'node:stream'
import type { Socket } from 'node:net'
import Koa from 'koa'
import { ApiRouter } from './router.js'
import { errorMiddleware } from './errors.js'
import { API_ROUTES } from './routes/index.js'
import { adminRoutes } from './routes/admin.js'
import { openApiRoutes } from './routes/openapi.js'
import type { NodeServices } from '../services.js'
import { closeServer, listen, writeRaw } from '../core/listen.js'
import { inTurn, OVERFLOW_REQUESTS } from '../core/pipelining.js'
import { RefusalLog } from '../exchange/refusal-log.js'
import { limitConnections } from './connection-limit.js'
import { overLimit, type RequestLimits } from '../core/limits.js'
import { BodyBudget, bodyContextMiddleware } from './body-budget.js'
import { eventSocketPath } from '../events/index.js'
import { consoleMiddleware, isConsolePath } from './ui.js'
import { accessMiddleware, accessPolicy, upgradeRefusal, type AccessPolicy } from './access.js'

export interface ApiServer {
  url: string
  /** The routes this server serves, in order, each with its methods (what its API description lists). */
  routes(): { pattern: string; methods: string[] }[]
  close(): Promise<void>
}

/**
 * The member's REST API on its own port: every route under /api/v1, errors as `{"error": "<CODE>: <message>"}`, its
 * OpenAPI description at /api/openapi.json (and FireFly's /api/swagger.json, .yaml), the console at /ui and the API page at /api.
 */
export async function startApiServer(opts: {
  host: string
  port: number
  services: NodeServices
  log: (line: string) => void
  /** WebSocket upgrades (the event socket); without it every upgrade is refused. */
  onUpgrade?: (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void
  /** Whom the API answers (node/api/access.ts); without it, the loopback names on `port` and no other origin. */
  access?: AccessPolicy
  /** The token the admin routes ask for (node/admin/token.ts); required when the config turns them on. */
  adminToken?: string
}): Promise<ApiServer> {
  const access = opts.access ?? accessPolicy({ host: opts.host, port: opts.port, allowedHosts: [], allowedOrigins: [] })
  const app = new Koa()
  app.proxy = false
  // Koa's default would print stack traces to stderr for every 4xx; errorMiddleware already answers and logs.
  app.silent = true
  app.use(errorMiddleware(opts.log))
  app.use(accessMiddleware(access))
  const limits = opts.services.config.limits
  app.use(frontDoor(limits, consoleMiddleware(opts.services.config.uiDir, opts.log)))

  const api = new ApiRouter(opts.services)
  for (const register of API_ROUTES) register(api)
  // Test controls only where the config turns them on (the local network does): elsewhere, 404 like any unknown path.
  if (opts.services.config.admin) {
    if (opts.adminToken === undefined) throw new ParleyError('INTERNAL', 'the admin routes are on (admin: true) but the server was given no admin token')
    adminRoutes(api, opts.adminToken)
  }
  // The description of every route above, made from their registrations (the page at /api reads it).
  openApiRoutes(api)
  app.use(api.routes())

  const handle = app.callback()
  // One request at a time per connection: a client pipelining thousands in one write cannot starve the others.
  // Connections refused or closed for what they hold: logged, but a flood of them writes a few lines a minute.
  const refusals = new RefusalLog({
    perMinute: API_REFUSAL_LINES_PER_MINUTE,
    log: opts.log,
    summary: (n) => `api: ${n} more connection refusal(s) in the last minute were not logged (limits.connections, limits.connectionsPerAddress, limits.queuedRequestsPerConnection)`,
  })
  const onOverflow = (socket: Socket, waiting: number): void =>
    refusals.refused(`api: closed a connection from ${socket.remoteAddress}: ${waiting} requests were waiting behind the one being served, past limits.queuedRequestsPerConnection (${limits.queuedRequestsPerConnection}) and the ${OVERFLOW_REQUESTS} more a client may have in flight`)
  const server = http.createServer({ maxHeaderSize: limits.headerBytes }, inTurn(handle, limits.queuedRequestsPerConnection, { onOverflow }))
  limitConnections(server, { total: limits.connections, perAddress: limits.connectionsPerAddress, onRefused: (line) => refusals.refused(line) })
  // Slow clients must not pin sockets forever; large uploads still stream (the timeouts bound idleness, not size).
  server.headersTimeout = 60_000
  server.requestTimeout = 0
  server.keepAliveTimeout = 5_000
  // A client that stops sending mid-upload (or stops reading a download) must not hold its socket forever; longer
  // than the longest ?confirm=true wait, during which the socket is legitimately quiet.
  server.timeout = 300_000
  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => answerClientError(err, socket, limits.headerBytes))
  // Without these listeners Node drops a CONNECT without a byte and answers an unknown Expect with an empty 417.
  server.on('connect', (_req: http.IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy())
    writeRaw(socket, 405, 'Method Not Allowed', new ParleyError('METHOD_NOT_ALLOWED', 'this API does not tunnel: CONNECT is not served'), { Allow: 'GET, HEAD, POST, OPTIONS' })
  })
  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const body = JSON.stringify(new ParleyError('EXPECTATION_FAILED', `Expect: ${JSON.stringify(req.headers.expect)} cannot be met; only 100-continue is understood`).toJSON())
    res.writeHead(417, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Connection: 'close' })
    res.end(body)
  })
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy())
    // Only WebSocket upgrades are taken; any other (curl --http2 offers `h2c`) is an ordinary request, answered
    // over HTTP/1.1 as a server that does not know the protocol would.
    if (String(req.headers.upgrade).toLowerCase() !== 'websocket') return serveWithoutUpgrade(handle, req, socket as Socket, head)
    const refused = upgradeRefusal(req, access)
    if (refused) return writeRaw(socket, refused.status, refused.reason, refused.error)
    if (opts.onUpgrade) opts.onUpgrade(req, socket, head)
    else writeRaw(socket, 404, 'Not Found', new ParleyError('NOT_FOUND', 'this server takes no WebSocket connections'))
  })
  await listen(server, opts.port, opts.host)
  return {
    url: `http://${opts.host}:${opts.port}`,
    routes: () => api.list(),
    close: () => {
      refusals.close()
      return closeServer(server)
    },
  }
}

const API_REFUSAL_LINES_PER_MINUTE = 20

/**
 * What every request meets before routing, in this order, as one middleware (each async middleware is a promise and
 * a dispatch more on every request): a request target longer than the member accepts is refused (a 414 naming the
 * limit); the event socket's paths asked without an upgrade are told what they are rather than 404; the web console's
 * files (/ui) and the API page (/api) are served, before the body budget, as nothing there has a body; everything else
 * gets its body context.
 */
function frontDoor(limits: RequestLimits, serveConsole: Koa.Middleware) {
  const withBody = bodyContextMiddleware(limits, new BodyBudget(limits.inFlightBodyBytes, limits.addressBodyBytes, limits.bodyStalledMs))
  return (ctx: Koa.Context, next: Koa.Next): Promise<void> => {
    const url = ctx.req.url ?? ''
    // Bytes of a URL are at least its UTF-16 length; only a long one needs counting.
    const length = url.length > limits.urlBytes / 3 ? Buffer.byteLength(url) : url.length
    if (length > limits.urlBytes) {
      const err = overLimit('urlBytes', limits.urlBytes, `the request target is ${length} bytes`)
      return Promise.reject(new ParleyError('URI_TOO_LONG', err.message))
    }
    const path = ctx.path
    if (eventSocketPath(path)) {
      return Promise.reject(
        new ParleyError('BAD_REQUEST', `${path} is the WebSocket event endpoint: connect with a WebSocket client (ws://${ctx.host}${path}?namespace=default&ephemeral)`),
      )
    }
    if (isConsolePath(path)) return Promise.resolve(serveConsole(ctx, next))
    return withBody(ctx, next)
  }
}

/**
 * What Node's HTTP parser refuses before any route sees it (oversize headers, a malformed request line) is answered
 * like every other refusal, with a status and the JSON error body, where the socket can still take an answer.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex, headerBytes: number): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const [status, reason, code] = err.code === 'HPE_HEADER_OVERFLOW' ? ([431, 'Request Header Fields Too Large', 'PAYLOAD_TOO_LARGE'] as const) : ([400, 'Bad Request', 'BAD_REQUEST'] as const)
  const detail =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? `the request line and headers are over ${headerBytes} bytes, the most this member accepts (limits.headerBytes)`
      : err.code === 'HPE_INVALID_URL'
        ? 'the request target is not a valid URL: percent-encode spaces, non-ASCII characters and other bytes a URL cannot carry'
        : `the request is not valid HTTP (${err.code ?? 'unparsable'})`
  writeRaw(socket, status, reason, new ParleyError(code, detail))
}

/**
 * A request Node handed over as an upgrade, served by the app as a plain request on a response bound to its socket;
 * the connection closes after the answer. Bytes that came after the head are put back for the body to read.
 */
function serveWithoutUpgrade(handle: (req: http.IncomingMessage, res: http.ServerResponse) => unknown, req: http.IncomingMessage, socket: Socket, head: Buffer): void {
  if (head.length > 0) socket.unshift(head)
  const res = new http.ServerResponse(req)
  res.shouldKeepAlive = false
  res.assignSocket(socket)
  res.once('finish', () => {
    res.detachSocket(socket)
    socket.once('finish', () => socket.destroy())
    socket.end()
  })
  void handle(req, res)
}
