import { expect } from 'chai'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect } from 'node:net'
import Koa from 'koa'
import { startApiServer, type ApiServer } from '../../../../node/api/server.js'
import { ApiRouter } from '../../../../node/api/router.js'
import { errorMiddleware } from '../../../../node/api/errors.js'
import { messageRoutes } from '../../../../node/api/routes/messages.js'
import { datatypeRoutes } from '../../../../node/api/routes/datatypes.js'
import { closeServer, listen } from '../../../../node/core/listen.js'
import type { NodeServices } from '../../../../node/services.js'
import { MESSAGE_FIELDS } from '../../../../node/db/query-fields.js'
import { filterSql } from '../../../../node/db/filter-sql.js'
import type { MessageQuery } from '../../../../node/model/index.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../node/core/limits.js'
import { DatabaseError } from '../../../../node/db/errors.js'
import { ParleyError } from '../../../../node/core/errors.js'

/** The API's error mapping over real HTTP: whatever layer refuses a request, the caller gets a 4xx and a JSON body. */
describe('api error mapping', () => {
  let server: http.Server
  let port: number
  const logs: string[] = []

  before(async () => {
    // Messages are listed through the data layer's filter compiler, as the node does, over no rows at all.
    const services = { query: { messages: { list: (q: MessageQuery) => (filterSql(q.filter, MESSAGE_FIELDS), []), get: () => undefined }, data: { getMany: () => [] } } } as unknown as NodeServices
    const app = new Koa()
    app.silent = true
    app.use(errorMiddleware((l) => logs.push(l)))
    const api = new ApiRouter(services)
    messageRoutes(api)
    datatypeRoutes(api)
    app.use(api.routes())
    server = http.createServer(app.callback())
    await listen(server, 0, '127.0.0.1')
    port = (server.address() as AddressInfo).port
  })
  after(async () => {
    await closeServer(server)
    expect(logs, 'nothing here is a server error').to.deep.equal([])
  })

  function call(method: string, path: string): Promise<{ status: number; json: { error?: string }; allow: string | undefined }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, agent: false, method, path }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { error?: string }, allow: res.headers.allow }),
        )
      })
      req.on('error', reject)
      req.end()
    })
  }

  it('a method no route serves (TRACE) is a 405 with the JSON error body, not a 500', async () => {
    const r = await call('TRACE', '/api/v1/messages')
    expect(r.status).to.equal(405)
    expect(r.json.error).to.match(/^METHOD_NOT_ALLOWED: /)
  })

  it('a method the path does not serve is a 405, an unknown path a 404, both with the JSON body', async () => {
    const put = await call('PUT', '/api/v1/messages')
    expect(put.status).to.equal(405)
    expect(put.json.error).to.match(/^METHOD_NOT_ALLOWED: /)
    const none = await call('GET', '/api/v1/nosuch')
    expect(none.status).to.equal(404)
    expect(none.json.error).to.match(/^NOT_FOUND: /)
  })

  // Found by the fuzzer: @koa/router's own 405 (and its 501 for methods it does not know) came without Allow.
  it('every 405 says in Allow what the path takes, whether the method is common, rare or WebDAV', async () => {
    for (const [method, path, allow] of [
      ['PUT', '/api/v1/messages', 'HEAD, GET, OPTIONS'],
      ['DELETE', '/api/v1/namespaces/ns1/messages/00000000-0000-4000-8000-000000000001', 'HEAD, GET, OPTIONS'],
      ['TRACE', '/api/v1/messages', 'HEAD, GET, OPTIONS'],
      ['PROPFIND', '/api/v1/messages', 'HEAD, GET, OPTIONS'],
      ['GET', '/api/v1/broadcast/datatype', 'POST, OPTIONS'],
    ] as const) {
      const r = await call(method, path)
      expect(r.status, `${method} ${path}`).to.equal(405)
      expect(r.allow, `${method} ${path}`).to.equal(allow)
      expect(r.json.error, `${method} ${path}`).to.match(new RegExp(`^METHOD_NOT_ALLOWED: ${method} is not served at \\S+; it takes ${allow.replace(', OPTIONS', '')}$`))
    }
  })

  it('OPTIONS answers 204 with Allow; any method on a path no route serves is a 404', async () => {
    const options = await call('OPTIONS', '/api/v1/broadcast/datatype')
    expect(options.status).to.equal(204)
    expect(options.allow).to.equal('POST, OPTIONS')
    for (const method of ['TRACE', 'PROPFIND', 'OPTIONS']) {
      const r = await call(method, '/api/v1/nosuch')
      expect(r.status, method).to.equal(404)
      expect(r.json.error, method).to.match(/^NOT_FOUND: /)
    }
  })

  it('a JSON body that is not valid UTF-8 is a 400, not silently repaired', async () => {
    const r = await new Promise<{ status: number; json: { error?: string } }>((resolve, reject) => {
      const body = Buffer.concat([Buffer.from('{"data":[{"value":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}]}')])
      const req = http.request({ host: '127.0.0.1', port, agent: false, method: 'POST', path: '/api/v1/messages/broadcast', headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error?: string } }))
      })
      req.on('error', reject)
      req.end(body)
    })
    expect(r.status).to.equal(400)
    expect(r.json.error).to.equal('INVALID_JSON: the request body is not valid UTF-8')
  })

  it('query keys that name Object properties (__proto__, constructor) are unknown filter fields: 400', async () => {
    for (const key of ['__proto__', 'constructor', 'toString']) {
      const r = await call('GET', `/api/v1/messages?${key}=x`)
      expect(r.status, key).to.equal(400)
      expect(r.json.error, key).to.match(new RegExp(`^INVALID_FILTER: unknown filter field "${key}"`))
    }
  })
})

describe('api server: what the HTTP parser refuses', () => {
  let api: ApiServer
  let port: number

  before(async () => {
    // A port that was free a moment ago: the server binds it itself, as a node does.
    const probe = http.createServer()
    await listen(probe, 0, '127.0.0.1')
    port = (probe.address() as AddressInfo).port
    await closeServer(probe)
    // No route is reached here: the server only needs the member's limits.
    api = await startApiServer({ host: '127.0.0.1', port, services: { config: { limits: DEFAULT_REQUEST_LIMITS } } as unknown as NodeServices, log: () => {} })
  })
  after(async () => {
    await api.close()
  })

  /** Raw bytes on a socket: the point is what happens before any request object exists. */
  function raw(request: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.end(request))
      const chunks: Buffer[] = []
      socket.on('data', (c: Buffer) => chunks.push(c))
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')))
      socket.on('error', reject)
    })
  }

  it('oversize headers are a 431 with the JSON error body', async () => {
    const answer = await raw(`GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`)
    expect(answer).to.match(/^HTTP\/1\.1 431 /)
    expect(answer).to.match(/content-type: application\/json/i)
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error).to.match(/^PAYLOAD_TOO_LARGE: .*\(limits\.headerBytes\)$/)
  })

  it('an upgrade other than WebSocket (curl --http2 offers h2c) is served as a plain request', async () => {
    const answer = await raw(`GET /api/v1/nowhere HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n`)
    expect(answer).to.match(/^HTTP\/1\.1 404 /)
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error).to.match(/^NOT_FOUND: no route for GET/)
  })

  it('a WebSocket upgrade where none is served is a JSON 404, and the socket is closed by the server', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      // The client never closes its side: the server must.
      const socket = connect(port, '127.0.0.1', () => socket.write(`GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`))
      const chunks: Buffer[] = []
      socket.on('data', (c: Buffer) => chunks.push(c))
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')))
      socket.on('error', reject)
    })
    expect(answer).to.match(/^HTTP\/1\.1 404 /)
  })

  it('a request target that is not a valid URL is a 400 saying how to encode it', async () => {
    const answer = await raw(`GET /api/v1/\u007fstatus HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
    expect(answer).to.match(/^HTTP\/1\.1 400 /)
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error).to.equal('BAD_REQUEST: the request target is not a valid URL: percent-encode spaces, non-ASCII characters and other bytes a URL cannot carry')
  })

  it('refuses to start with the admin routes on and no admin token', async () => {
    let err: unknown
    await startApiServer({ host: '127.0.0.1', port, services: { config: { limits: DEFAULT_REQUEST_LIMITS, admin: true } } as unknown as NodeServices, log: () => {} }).catch((e: unknown) => (err = e))
    expect(err).to.be.instanceOf(ParleyError).and.include({ code: 'INTERNAL', message: 'the admin routes are on (admin: true) but the server was given no admin token' })
  })

  it('a request line that is not HTTP is a 400 with the JSON error body', async () => {
    const answer = await raw('NOT HTTP AT ALL\r\n\r\n')
    expect(answer).to.match(/^HTTP\/1\.1 400 /)
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error).to.match(/^BAD_REQUEST: the request is not valid HTTP/)
  })
})

describe('api error mapping: a database that went away', () => {
  it('is a 503 whose JSON body names the database, and is logged', async () => {
    const logs: string[] = []
    const app = new Koa()
    app.silent = true
    app.use(errorMiddleware((l) => logs.push(l)))
    app.use(() => {
      throw new DatabaseError('DB_UNAVAILABLE', 'the database postgres://parley:***@127.0.0.1:5432/org0 is unavailable: Connection terminated unexpectedly')
    })
    const server = http.createServer(app.callback())
    await listen(server, 0, '127.0.0.1')
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/messages/broadcast`, { method: 'POST' })
      expect(res.status).to.equal(503)
      expect(res.headers.get('content-type')).to.match(/^application\/json/)
      expect(await res.json()).to.deep.equal({ error: 'UNAVAILABLE: DB_UNAVAILABLE: the database postgres://parley:***@127.0.0.1:5432/org0 is unavailable: Connection terminated unexpectedly' })
      expect(logs).to.have.length(1)
    } finally {
      await closeServer(server)
    }
  })
})

describe('api error mapping: what other layers throw', () => {
  const logs: string[] = []
  let server: http.Server
  let port: number
  /** What the next request's handler throws. */
  let thrown: unknown

  before(async () => {
    const app = new Koa()
    app.silent = true
    app.use(errorMiddleware((l) => logs.push(l)))
    app.use(() => {
      throw thrown
    })
    server = http.createServer(app.callback())
    await listen(server, 0, '127.0.0.1')
    port = (server.address() as AddressInfo).port
  })
  after(() => closeServer(server))
  beforeEach(() => (logs.length = 0))

  async function answer(err: unknown): Promise<{ status: number; error: string }> {
    thrown = err
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/x`, { method: 'POST' })
    return { status: res.status, error: ((await res.json()) as { error: string }).error }
  }
  const withStatus = (message: string, over: Record<string, unknown>): Error => Object.assign(new Error(message), over)

  it("maps a 4xx of Koa or its body parser to our code, by status, whichever property carries it", async () => {
    expect(await answer(withStatus('request entity too large', { status: 413 }))).to.deep.equal({ status: 413, error: 'PAYLOAD_TOO_LARGE: request entity too large' })
    expect(await answer(withStatus('unsupported charset "UTF-7"', { statusCode: 415 }))).to.deep.equal({ status: 415, error: 'UNSUPPORTED_MEDIA_TYPE: unsupported charset "UTF-7"' })
    expect(await answer(withStatus('Not Found', { status: 404 }))).to.deep.equal({ status: 404, error: 'NOT_FOUND: Not Found' })
    expect(await answer(withStatus('Method Not Allowed', { status: 405 }))).to.deep.equal({ status: 405, error: 'METHOD_NOT_ALLOWED: Method Not Allowed' })
    expect(await answer(withStatus('invalid JSON, only supports object and array', { status: 400 }))).to.deep.equal({ status: 400, error: 'INVALID_JSON: invalid JSON, only supports object and array' })
    expect(await answer(withStatus('request aborted', { status: 400 }))).to.deep.equal({ status: 400, error: 'BAD_REQUEST: request aborted' })
    expect(logs).to.deep.equal([])
  })

  it('answers anything else 500 with one line, logged; a full store 507, logged by whoever found it', async () => {
    expect(await answer(withStatus('upstream failed', { status: 502 }))).to.deep.equal({ status: 500, error: 'INTERNAL: upstream failed' })
    expect(await answer('a string')).to.deep.equal({ status: 500, error: 'INTERNAL: a string' })
    expect(logs).to.deep.equal(['api: POST /api/v1/x failed: upstream failed', 'api: POST /api/v1/x failed: a string'])
    logs.length = 0
    expect(await answer(new ParleyError('STORAGE_FULL', 'the blob store is full'))).to.deep.equal({ status: 507, error: 'STORAGE_FULL: the blob store is full' })
    expect(logs).to.deep.equal([])
  })
})
