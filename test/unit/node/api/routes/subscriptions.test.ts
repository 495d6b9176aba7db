import { expect } from 'chai'
import { localCall } from '../../../../support/local-http.js'
import { join } from 'node:path'
import { startApiServer, type ApiServer } from '../../../../../node/api/server.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../../node/core/limits.js'
import type { NodeServices } from '../../../../../node/services.js'
import { freePort } from '../../../../../network/process.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { Database } from '../../../../../node/db/database.js'
import { migrations } from '../../../../../node/db/schema/index.js'
import { SubscriptionsRepo } from '../../../../../node/db/repos/subscriptions.js'
import { SubscriptionManager } from '../../../../../node/events/subscriptions.js'
import { parseDurationMs } from '../../../../../node/events/subscription-input.js'
import { snapshotInThread } from '../../../../support/repos.js'

interface Reply {
  status: number
  text: string
  json: any // eslint-disable-line @typescript-eslint/no-explicit-any -- test reads of answers of many shapes
  allow: string | undefined
}

/** The subscription routes over real HTTP, through the real server and manager, over a real (temporary) database. */
describe('subscriptions: API', () => {
  const temp = new TempDirs()
  let db: Database
  let api: ApiServer
  let port: number
  let last = 0
  const logs: string[] = []

  before(async () => {
    db = await Database.open({ dir: join(await temp.make('parley-subs-api-'), 'db'), migrations, buildSnapshot: snapshotInThread })
    const subscriptions = new SubscriptionManager({ db, repo: new SubscriptionsRepo(db), lastSequence: () => last, log: (l) => logs.push(l) })
    const services = { config: { limits: DEFAULT_REQUEST_LIMITS }, subscriptions } as unknown as NodeServices
    port = await freePort()
    api = await startApiServer({ host: '127.0.0.1', port, services, log: (l) => logs.push(l) })
  })
  after(async () => {
    await api.close()
    await db.close()
    await temp.cleanup()
    expect(logs, 'nothing here is a server error').to.deep.equal([])
  })

  const call = (method: string, path: string, body?: unknown): Promise<Reply> => localCall(port, method, path, body)

  /** The three places the same collection is served: FireFly's two and the spec's, which has no /api/v1. */
  const FORMS: { label: string; base: (ns: string) => string; ns: string }[] = [
    { label: '/api/v1/namespaces/{ns}', base: (ns) => `/api/v1/namespaces/${ns}/subscriptions`, ns: 'ns1' },
    { label: '/api/v1 (default namespace)', base: () => '/api/v1/subscriptions', ns: 'default' },
    { label: '/namespaces/{ns} (the spec)', base: (ns) => `/namespaces/${ns}/subscriptions`, ns: 'ns2' },
  ]

  for (const form of FORMS) {
    describe(`at ${form.label}`, () => {
      const base = form.base(form.ns)

      it('POST creates: 201 with the subscription, firstEvent locked in; a second POST of the name is 409', async () => {
        last = 17
        const r = await call('POST', base, { name: 'app', filter: { events: 'message_confirmed', tag: 't' }, options: { readAhead: 5 } })
        expect(r.status, r.text).to.equal(201)
        expect(Object.keys(r.json)).to.deep.equal(['id', 'namespace', 'name', 'transport', 'filter', 'options', 'created'])
        expect(r.json).to.include({ namespace: form.ns, name: 'app', transport: 'websockets' })
        expect(r.json.filter).to.deep.equal({ events: 'message_confirmed', message: { tag: 't' }, transaction: {}, blockchainevent: {} })
        expect(r.json.options).to.deep.equal({ firstEvent: '17', readAhead: 5, withData: false })
        const again = await call('POST', base, { name: 'app' })
        expect(again.status).to.equal(409)
        expect(again.json.error).to.match(new RegExp(`^CONFLICT: a subscription with name '${form.ns}:app' already exists`))
      })

      it('GET lists, newest first, with paging and filters', async () => {
        await call('POST', base, { name: 'second', options: { firstEvent: 'oldest' } })
        const all = await call('GET', base)
        expect(all.status).to.equal(200)
        expect(all.json.map((s: { name: string }) => s.name)).to.deep.equal(['second', 'app'])
        expect((await call('GET', `${base}?limit=1&skip=1`)).json.map((s: { name: string }) => s.name)).to.deep.equal(['app'])
        expect((await call('GET', `${base}?name=second`)).json.map((s: { name: string }) => s.name)).to.deep.equal(['second'])
        expect((await call('GET', `${base}?events=message_confirmed`)).json.map((s: { name: string }) => s.name)).to.deep.equal(['app'])
        const bad = await call('GET', `${base}?nope=1`)
        expect(bad.status).to.equal(400)
        expect(bad.json.error).to.match(/^INVALID_FILTER: unknown filter field "nope"/)
      })

      it('GET one by id or by name: 200, with status.currentOffset under fetchstatus; 404 when there is none', async () => {
        const byName = await call('GET', `${base}/app`)
        expect(byName.status).to.equal(200)
        expect(byName.json).not.to.have.property('status')
        const byId = await call('GET', `${base}/${byName.json.id as string}`)
        expect(byId.json).to.deep.equal(byName.json)
        const withStatus = await call('GET', `${base}/app?fetchstatus=true`)
        expect(withStatus.json.status).to.deep.equal({ currentOffset: 17 })
        expect((await call('GET', `${base}/second?fetchstatus`)).json.status).to.deep.equal({ currentOffset: 0 })
        expect((await call('GET', `${base}/app?fetchstatus=false`)).json).not.to.have.property('status')
        for (const missing of ['nope', '00000000-0000-4000-8000-000000000000']) {
          const r = await call('GET', `${base}/${missing}`)
          expect(r.status, missing).to.equal(404)
          expect(r.json.error).to.equal(`NOT_FOUND: subscription "${missing}" not found in namespace ${form.ns}`)
        }
      })

      it('PUT replaces by name: 200, same id and created, position kept; creates a new name: 200', async () => {
        const before = (await call('GET', `${base}/app`)).json
        last = 99
        const r = await call('PUT', base, { ...before, filter: { message: { author: 'org1' } }, options: { firstEvent: 'newest', batch: true } })
        expect(r.status, r.text).to.equal(200)
        expect(r.json).to.include({ id: before.id, created: before.created })
        expect(r.json.updated).to.be.a('string')
        expect(r.json.filter).to.deep.equal({ message: { author: 'org1' }, transaction: {}, blockchainevent: {} })
        expect(r.json.options).to.deep.equal({ batch: true, batchTimeout: '50ms', firstEvent: '17', readAhead: 50, withData: false })
        expect((await call('GET', `${base}/app?fetchstatus=true`)).json.status).to.deep.equal({ currentOffset: 17 })
        const created = await call('PUT', base, { name: 'third' })
        expect(created.status).to.equal(200)
        expect(created.json.options.firstEvent).to.equal('99')
      })

      it('bad bodies are 400 naming the mistake', async () => {
        const cases: [unknown, RegExp][] = [
          [{}, /^INVALID_FIELD: name is required$/],
          [{ name: 'x', filter: { message: { tag: '(' } } }, /^INVALID_FIELD: unable to compile filter\.message\.tag regexp "\(":/],
          [{ name: 'x', filter: { bogus: 'a' } }, /^INVALID_FIELD: unknown subscription filter key filter\.bogus;/],
          [{ name: 'x', options: { withData: true } }, /^INVALID_FIELD: withData is not supported by the websockets transport/],
          [{ name: 'x', options: { firstEvent: 'first' } }, /^INVALID_FIELD: options\.firstEvent must be 'newest', 'oldest' or a sequence number/],
          [{ name: 'x', transport: 'webhooks' }, /^INVALID_FIELD: transport must be one of websockets/],
          ['{"name": ', /^INVALID_JSON:/],
          [[], /^INVALID_FIELD: the request body must be a JSON object/],
        ]
        for (const method of ['POST', 'PUT']) {
          for (const [body, error] of cases) {
            const r = await call(method, base, body)
            expect(r.status, `${method} ${JSON.stringify(body)}`).to.equal(400)
            expect(r.json.error, `${method} ${JSON.stringify(body)}`).to.match(error)
          }
        }
      })

      it('DELETE by id or by name: 204 with no body; 404 when there is none', async () => {
        const third = (await call('GET', `${base}/third`)).json
        const byId = await call('DELETE', `${base}/${third.id as string}`)
        expect(byId.status).to.equal(204)
        expect(byId.text).to.equal('')
        const byName = await call('DELETE', `${base}/second`)
        expect(byName.status).to.equal(204)
        expect((await call('GET', `${base}/second`)).status).to.equal(404)
        const again = await call('DELETE', `${base}/second`)
        expect(again.status).to.equal(404)
        expect(again.json.error).to.equal(`NOT_FOUND: subscription "second" not found in namespace ${form.ns}`)
        expect((await call('GET', base)).json.map((s: { name: string }) => s.name)).to.deep.equal(['app'])
      })
    })
  }

  describe('across the forms', () => {
    it('the three forms are one collection per namespace', async () => {
      await call('POST', '/namespaces/shared/subscriptions', { name: 'one' })
      const viaApi = await call('GET', '/api/v1/namespaces/shared/subscriptions/one')
      expect(viaApi.status).to.equal(200)
      await call('POST', '/api/v1/subscriptions', { name: 'dflt' })
      expect((await call('GET', '/namespaces/default/subscriptions/dflt')).status).to.equal(200)
      expect((await call('GET', '/namespaces/shared/subscriptions/dflt')).status).to.equal(404)
    })

    it('a bad namespace is 400 in every form', async () => {
      for (const path of ['/api/v1/namespaces/-bad/subscriptions', '/namespaces/-bad/subscriptions']) {
        const r = await call('GET', path)
        expect(r.status, path).to.equal(400)
        expect(r.json.error).to.match(/^INVALID_FIELD: namespace must be/)
      }
    })

    it('a batchTimeout of a fraction of a millisecond is stored as a duration delivery reads; one out of range is 400 naming it', async () => {
      // JSON sends 1e-7 in exponent form; `${n}ms` would have stored "1e-7ms", which no subscription could start with.
      const created = await call('POST', '/api/v1/subscriptions', { name: 'tiny', options: { batch: true, batchTimeout: 1e-7 } })
      expect(created.status, created.text).to.equal(201)
      expect(created.json.options.batchTimeout).to.equal('0ms')
      const replaced = await call('PUT', '/api/v1/subscriptions', { name: 'tiny', options: { batch: true, batchTimeout: 9e-7 } })
      expect(replaced.json.options.batchTimeout).to.equal('0.000001ms')
      expect(parseDurationMs(replaced.json.options.batchTimeout)).to.equal(0.000001)
      const tooLong = await call('POST', '/api/v1/subscriptions', { name: 'long', options: { batch: true, batchTimeout: 1e300 } })
      expect(tooLong.status).to.equal(400)
      expect(tooLong.json.error).to.equal('INVALID_FIELD: options.batchTimeout must be from 0 to 2147483647 ms, not 1e+300')
    })

    it('a method a path does not take is 405 naming what it takes; OPTIONS answers the list', async () => {
      const cases: [string, string, string][] = [
        ['PATCH', '/api/v1/subscriptions', 'HEAD, GET, POST, PUT, OPTIONS'],
        ['POST', '/api/v1/namespaces/default/subscriptions/app', 'HEAD, GET, DELETE, OPTIONS'],
        ['PUT', '/namespaces/default/subscriptions/app', 'HEAD, GET, DELETE, OPTIONS'],
        ['DELETE', '/namespaces/default/subscriptions', 'HEAD, GET, POST, PUT, OPTIONS'],
      ]
      for (const [method, path, allow] of cases) {
        const r = await call(method, path)
        expect(r.status, `${method} ${path}`).to.equal(405)
        expect(r.allow, `${method} ${path}`).to.equal(allow)
        expect(r.json.error).to.match(new RegExp(`^METHOD_NOT_ALLOWED: ${method} is not served at `))
      }
      const options = await call('OPTIONS', '/namespaces/default/subscriptions')
      expect(options.status).to.equal(204)
      expect(options.allow).to.equal('HEAD, GET, POST, PUT, OPTIONS')
      // Only subscriptions are served without /api/v1.
      expect((await call('GET', '/namespaces/default/messages')).status).to.equal(404)
    })
  })
})
