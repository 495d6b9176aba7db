import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'chai'
import Koa from 'koa'
import { ApiRouter } from '../../../../node/api/router.js'
import { errorMiddleware } from '../../../../node/api/errors.js'
import { sendJson } from '../../../../node/api/body.js'
import { closeServer, listen } from '../../../../node/core/listen.js'
import { localCall } from '../../../support/local-http.js'

/** A route's description, as every registration takes one (what it says is the API description's concern). */
const doc = (operationId: string) => ({ summary: operationId, tag: 'Status', operationId, responses: { 200: { description: 'echo' } }, errors: [] }) as const
const param = { description: 'p' }

/**
 * The API's router: the matching rules the routes have always been served with (case-insensitive literals, one
 * optional trailing slash, a parameter being one non-empty percent-decoded segment, the first registered route that
 * takes a request running it) and the answers for what no route takes.
 */
describe('api: routing requests to handlers', function () {
  let server: http.Server
  let port: number
  const logs: string[] = []

  before(async function () {
    const app = new Koa()
    app.silent = true
    app.use(errorMiddleware((l) => logs.push(l)))
    const api = new ApiRouter({ name: 'services' })
    const echo = (route: string) => (ctx: Koa.Context, s: { name: string }, ns: string, q: Record<string, unknown>): void =>
      sendJson(ctx, 200, { route, ns, params: { ...ctx.params }, services: s.name, q: { ...q } as Record<string, string> })
    api.get('/messages', doc('list'), echo('list'))
    // Registered before `/messages/:id`: a literal segment does not outrank a parameter; order decides.
    api.get('/messages/latest', doc('latest'), echo('latest'))
    api.get('/messages/:id', { ...doc('one'), params: { id: param } }, echo('one'))
    api.get('/messages/:id/data', { ...doc('data'), params: { id: param } }, echo('data'))
    api.post('/messages/broadcast', doc('broadcast'), echo('broadcast'))
    api.get('/datatypes/:name/:version', { ...doc('datatype'), params: { name: param, version: param } }, echo('datatype'))
    api.delete('/subscriptions/:id', { ...doc('unsubscribe'), params: { id: param } }, echo('unsubscribe'), { unprefixed: true })
    api.at('post', '/admin/v1/chain/hold', doc('admin'), (ctx, s) => sendJson(ctx, 200, { route: 'admin', services: s.name }))
    app.use(api.routes())
    server = http.createServer(app.callback())
    await listen(server, 0, '127.0.0.1')
    port = (server.address() as AddressInfo).port
  })
  after(async function () {
    await closeServer(server)
    expect(logs, 'nothing here is a server error').to.deep.equal([])
  })

  const call = (method: string, path: string, body?: unknown) => localCall(port, method, path, body)
  const routeOf = async (method: string, path: string): Promise<unknown> => {
    const r = await call(method, path)
    expect(r.status, `${method} ${path}: ${r.text}`).to.equal(200)
    return r.json
  }

  it('serves a namespaced route at /api/v1/namespaces/{ns}/..., at /api/v1/... for the default namespace, and unprefixed when asked', async function () {
    expect(await routeOf('GET', '/api/v1/namespaces/ns1/messages')).to.deep.include({ route: 'list', ns: 'ns1', services: 'services' })
    expect(await routeOf('GET', '/api/v1/messages')).to.deep.include({ route: 'list', ns: 'default' })
    expect(await routeOf('DELETE', '/namespaces/ns2/subscriptions/s1')).to.deep.include({ route: 'unsubscribe', ns: 'ns2', params: { ns: 'ns2', id: 's1' } })
    expect((await call('GET', '/namespaces/ns1/messages')).status, 'not unprefixed').to.equal(404)
    expect(await routeOf('POST', '/admin/v1/chain/hold')).to.deep.equal({ route: 'admin', services: 'services' })
  })

  it('passes path parameters percent-decoded (raw when the encoding is broken) and the query parsed', async function () {
    expect(await routeOf('GET', '/api/v1/datatypes/widget%20v2/1.0%2F3?limit=5&sort=created')).to.deep.include({
      route: 'datatype',
      params: { name: 'widget v2', version: '1.0/3' },
      q: { limit: '5', sort: 'created' },
    })
    expect(await routeOf('GET', '/api/v1/messages/%E0%A4%A')).to.deep.include({ route: 'one', params: { id: '%E0%A4%A' } })
  })

  it('matches literals case-insensitively, takes one trailing slash, and never an empty parameter', async function () {
    expect(await routeOf('GET', '/API/V1/Messages')).to.deep.include({ route: 'list' })
    expect(await routeOf('GET', '/API/V1/Namespaces/Ns1/Messages/AbC%2fD')).to.deep.include({ route: 'one', ns: 'Ns1', params: { ns: 'Ns1', id: 'AbC/D' } })
    expect(await routeOf('GET', '/api/v1/messages/')).to.deep.include({ route: 'list' })
    expect(await routeOf('GET', '/api/v1/messages/m1/data/')).to.deep.include({ route: 'data', params: { id: 'm1' } })
    expect((await call('GET', '/api/v1/messages//')).status, 'two trailing slashes').to.equal(404)
    expect((await call('GET', '/api/v1/messages//data')).status, 'an empty id').to.equal(404)
    expect((await call('GET', '/api/v1/namespaces//messages')).status, 'an empty namespace').to.equal(404)
  })

  it('runs the first registered route that takes the path and the method', async function () {
    expect(await routeOf('GET', '/api/v1/messages/latest')).to.deep.include({ route: 'latest' })
    expect(await routeOf('GET', '/api/v1/messages/other')).to.deep.include({ route: 'one', params: { id: 'other' } })
    // POST finds the broadcast route although two GET routes match the same path first.
    expect(await routeOf('POST', '/api/v1/messages/broadcast')).to.deep.include({ route: 'broadcast' })
  })

  it('answers JSON as application/json; charset=utf-8', async function () {
    const type = await new Promise<string | undefined>((resolve, reject) =>
      http.get({ host: '127.0.0.1', port, agent: false, path: '/api/v1/messages' }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.headers['content-type']))
      }).on('error', reject),
    )
    expect(type).to.equal('application/json; charset=utf-8')
  })

  it('answers HEAD with a GET route, without a body', async function () {
    const r = await call('HEAD', '/api/v1/messages/m1')
    expect(r.status).to.equal(200)
    expect(r.text).to.equal('')
  })

  it('a path served with other methods: 405 with Allow in registration order (OPTIONS: 204); a path nothing serves: 404', async function () {
    const put = await call('PUT', '/api/v1/messages/broadcast')
    expect(put.status).to.equal(405)
    expect(put.allow).to.equal('HEAD, GET, POST, OPTIONS')
    expect(put.json).to.deep.equal({ error: 'METHOD_NOT_ALLOWED: PUT is not served at /api/v1/messages/broadcast; it takes HEAD, GET, POST' })
    const options = await call('OPTIONS', '/api/v1/messages/broadcast')
    expect(options.status).to.equal(204)
    expect(options.allow).to.equal('HEAD, GET, POST, OPTIONS')
    for (const method of ['GET', 'OPTIONS', 'PROPFIND']) {
      const none = await call(method, '/api/v1/nosuch/route')
      expect(none.status, method).to.equal(404)
      expect(none.json, method).to.deep.equal({ error: `NOT_FOUND: no route for ${method} /api/v1/nosuch/route` })
    }
  })

  it('refuses a namespace that is not a name before the handler runs', async function () {
    const r = await call('GET', '/api/v1/namespaces/bad%20ns/messages')
    expect(r.status).to.equal(400)
    expect((r.json as { error: string }).error).to.match(/^INVALID_FIELD: namespace must be/)
  })

  it('lists every route registered, in order, with the methods it answers and its description', function () {
    const api = new ApiRouter({})
    api.get('/status', doc('status'), () => {})
    api.post('/messages/broadcast', doc('broadcast'), () => {}, { unprefixed: true })
    api.at('get', '/admin/v1/controls', doc('controls'), () => {})
    expect(api.list()).to.deep.equal([
      { pattern: '/api/v1/namespaces/:ns/status', methods: ['HEAD', 'GET'] },
      { pattern: '/api/v1/status', methods: ['HEAD', 'GET'] },
      { pattern: '/api/v1/namespaces/:ns/messages/broadcast', methods: ['POST'] },
      { pattern: '/api/v1/messages/broadcast', methods: ['POST'] },
      { pattern: '/namespaces/:ns/messages/broadcast', methods: ['POST'] },
      { pattern: '/admin/v1/controls', methods: ['HEAD', 'GET'] },
    ])
    // The same routes with their descriptions and the form each path takes (what the API description is made of).
    expect(api.documented().map((r) => [r.method, r.pattern, r.form, r.doc.operationId])).to.deep.equal([
      ['GET', '/api/v1/namespaces/:ns/status', 'namespaced', 'status'],
      ['GET', '/api/v1/status', 'default', 'status'],
      ['POST', '/api/v1/namespaces/:ns/messages/broadcast', 'namespaced', 'broadcast'],
      ['POST', '/api/v1/messages/broadcast', 'default', 'broadcast'],
      ['POST', '/namespaces/:ns/messages/broadcast', 'unprefixed', 'broadcast'],
      ['GET', '/admin/v1/controls', 'global', 'controls'],
    ])
  })
})
