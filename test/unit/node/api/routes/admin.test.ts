import { expect } from 'chai'
import { localCall } from '../../../../support/local-http.js'
import { startApiServer, type ApiServer } from '../../../../../node/api/server.js'
import { Controls } from '../../../../../node/admin/controls.js'
import { DeliveryGate } from '../../../../../node/messaging/delivery-gate.js'
import { Gate } from '../../../../../node/core/gate.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../../node/core/limits.js'
import { newId, type BatchId } from '../../../../../node/core/ids.js'
import type { NodeServices } from '../../../../../node/services.js'
import type { BatchRecord, Identity } from '../../../../../node/model/index.js'
import { freePort } from '../../../../../network/process.js'

const PENDING = newId<BatchId>()
const SENT = newId<BatchId>()
const TOKEN = 'f'.repeat(64)

/** The admin routes over real HTTP through the real server, with the real controls over stand-in lookups. */
describe('admin API', () => {
  const servers: ApiServer[] = []
  const logs: string[] = []

  async function serve(admin: boolean | undefined): Promise<{ port: number; gate: DeliveryGate; chain: Gate; ipfs: Gate }> {
    const gate = new DeliveryGate()
    const chain = new Gate()
    const ipfs = new Gate()
    const controls = new Controls({
      org: 'org0',
      deliveries: gate,
      pendingTo: (org) => (org === 'org1' ? [PENDING] : []),
      chain,
      ipfs,
      identities: { byDid: (did) => (['did:firefly:org/org0', 'did:firefly:org/org1', 'did:firefly:org/org2'].includes(did) ? ({ type: 'org' } as Identity) : undefined) },
      messages: { get: () => undefined, own: () => undefined },
      batches: { get: () => undefined, local: (id) => (id === SENT ? ({ id, type: 'private', local: true } as BatchRecord) : undefined) },
    })
    const port = await freePort()
    const services = { config: { limits: DEFAULT_REQUEST_LIMITS, ...(admin === undefined ? {} : { admin }) }, controls } as unknown as NodeServices
    servers.push(await startApiServer({ host: '127.0.0.1', port, services, log: (l) => logs.push(l), adminToken: TOKEN }))
    return { port, gate, chain, ipfs }
  }

  after(async () => {
    for (const s of servers) await s.close()
    expect(logs, 'nothing here is a server error').to.deep.equal([])
  })

  const call = (port: number, method: string, path: string, body?: unknown) => localCall(port, method, path, body, { authorization: `Bearer ${TOKEN}` })

  const ROUTES: [string, string][] = [
    ['GET', '/admin/v1/controls'],
    ['POST', '/admin/v1/exchange/hold'],
    ['POST', '/admin/v1/exchange/release'],
    ['POST', '/admin/v1/exchange/drop'],
    ['POST', '/admin/v1/chain/hold'],
    ['POST', '/admin/v1/chain/release'],
    ['POST', '/admin/v1/ipfs/hold'],
    ['POST', '/admin/v1/ipfs/release'],
  ]

  for (const admin of [undefined, false]) {
    it(`a member whose config has ${admin === undefined ? 'no admin' : 'admin: false'} has no admin route: 404 like any unknown path`, async () => {
      const { port, chain } = await serve(admin)
      for (const [method, path] of ROUTES) {
        const r = await call(port, method, path, method === 'POST' ? '{"to":"org1"}' : undefined)
        expect(r.status, `${method} ${path}`).to.equal(404)
        expect(r.json).to.deep.equal({ error: `NOT_FOUND: no route for ${method} ${path}` })
      }
      expect(chain.held).to.equal(false)
    })
  }

  describe('served (admin: true)', () => {
    let port: number
    let chain: Gate
    let ipfs: Gate
    let gate: DeliveryGate
    before(async () => ({ port, chain, ipfs, gate } = await serve(true)))

    const post = (path: string, body?: unknown) => call(port, 'POST', `/admin/v1${path}`, body === undefined ? undefined : JSON.stringify(body))

    it('refuses every control without the admin token, or with another, 401 before reading anything', async () => {
      for (const authorization of [undefined, `Bearer ${'e'.repeat(64)}`, TOKEN, `Basic ${TOKEN}`, 'Bearer ']) {
        for (const [method, path] of ROUTES) {
          const r = await localCall(port, method, path, method === 'POST' ? '{"to":"org1"}' : undefined, authorization === undefined ? {} : { authorization })
          expect(r.status, `${method} ${path} with ${authorization}`).to.equal(401)
          expect((r.json as { error: string }).error).to.match(/^UNAUTHORIZED: .*Authorization: Bearer <token>.*admin-token/)
        }
      }
      expect([chain.held, ipfs.held, gate.view().held.length]).to.deep.equal([false, false, 0])
    })

    it('GET controls answers the controls in force, in the contract\'s shape', async () => {
      const r = await call(port, 'GET', '/admin/v1/controls')
      expect(r.status).to.equal(200)
      expect(r.text).to.equal('{"exchange":{"held":[],"dropped":[]},"chain":{"held":false},"ipfs":{"held":false}}')
    })

    it('exchange hold, release and drop answer the controls (a drop: what it dropped)', async () => {
      let r = await post('/exchange/hold', { to: 'org1' })
      expect(r.status, r.text).to.equal(200)
      expect(r.json).to.deep.equal({ exchange: { held: [{ to: 'org1' }], dropped: [] }, chain: { held: false }, ipfs: { held: false } })
      r = await post('/exchange/hold', { to: 'org2', batch: SENT.toUpperCase() })
      expect((r.json as { exchange: unknown }).exchange).to.deep.equal({ held: [{ to: 'org1' }, { to: 'org2', batch: SENT }], dropped: [] })
      expect(gate.verdict(SENT, 'org2')).to.equal('held')
      r = await post('/exchange/release', { to: 'org1' })
      expect(r.status).to.equal(200)
      expect((r.json as { exchange: unknown }).exchange).to.deep.equal({ held: [{ to: 'org2', batch: SENT }], dropped: [] })

      r = await post('/exchange/drop', { to: 'org1' })
      expect(r.status).to.equal(200)
      expect(r.text).to.equal(`{"dropped":[{"to":"org1","batch":"${PENDING}"}]}`)
      r = await post('/exchange/drop', { to: 'org2', batch: SENT })
      expect(r.json).to.deep.equal({ dropped: [{ to: 'org2', batch: SENT }] })
      r = await call(port, 'GET', '/admin/v1/controls')
      expect((r.json as { exchange: unknown }).exchange).to.deep.equal({
        held: [{ to: 'org2', batch: SENT }],
        dropped: [
          { to: 'org1', batch: PENDING },
          { to: 'org2', batch: SENT },
        ],
      })
      await post('/exchange/release', { to: 'org2' })
    })

    it('chain and IPFS hold and release answer the controls and set the gates', async () => {
      let r = await post('/chain/hold')
      expect(r.status).to.equal(200)
      expect(r.json).to.deep.include({ chain: { held: true }, ipfs: { held: false } })
      expect(chain.held).to.equal(true)
      r = await post('/ipfs/hold')
      expect(r.json).to.deep.include({ chain: { held: true }, ipfs: { held: true } })
      r = await post('/chain/release')
      expect(r.json).to.deep.include({ chain: { held: false }, ipfs: { held: true } })
      r = await post('/ipfs/release')
      expect(r.json).to.deep.include({ chain: { held: false }, ipfs: { held: false } })
      expect([chain.held, ipfs.held]).to.deep.equal([false, false])
    })

    it('bad bodies are 400 with the API\'s error JSON, and change nothing', async () => {
      const before = (await call(port, 'GET', '/admin/v1/controls')).text
      const cases: [string | undefined, RegExp][] = [
        [JSON.stringify({ to: 'org7' }), /^INVALID_FIELD: to names no org registered here: "org7"$/],
        [JSON.stringify({ to: 'org1', message: 'not-a-uuid' }), /^INVALID_ID: message is not a valid UUID: "not-a-uuid"$/],
        [JSON.stringify({ to: 'org1', batch: '1234' }), /^INVALID_ID: batch is not a valid UUID: "1234"$/],
        [JSON.stringify({ to: 'org1', batch: newId() }), /^INVALID_FIELD: batch [0-9a-f-]+ is not known to this member$/],
        [JSON.stringify({ to: 'org1', message: newId() }), /^INVALID_FIELD: message [0-9a-f-]+ is not known to this member$/],
        [JSON.stringify({ to: 'org0' }), /^INVALID_FIELD: to names this member's own org org0/],
        [JSON.stringify({ org: 'org1' }), /^INVALID_FIELD: "org" is not a field/],
        [JSON.stringify(['org1']), /^INVALID_FIELD: the body must be an object/],
        ['{"to": ', /^INVALID_JSON: /],
        [undefined, /^INVALID_JSON: the request body is empty/],
      ]
      for (const path of ['/exchange/hold', '/exchange/release', '/exchange/drop']) {
        for (const [body, re] of cases) {
          const r = await call(port, 'POST', `/admin/v1${path}`, body)
          expect(r.status, `${path} ${body}`).to.equal(400)
          expect((r.json as { error: string }).error, `${path} ${body}`).to.match(re)
        }
      }
      expect((await call(port, 'GET', '/admin/v1/controls')).text).to.equal(before)
    })

    it('another method is 405 naming what the path takes; an unknown admin path is 404; none is namespaced', async () => {
      const r = await call(port, 'GET', '/admin/v1/exchange/hold')
      expect(r.status).to.equal(405)
      expect(r.allow).to.equal('POST, OPTIONS')
      for (const path of ['/admin/v1/exchange/pause', '/admin/v1', '/api/v1/admin/v1/controls', '/api/v1/namespaces/default/admin/v1/controls', '/admin/v2/controls']) {
        expect((await call(port, 'GET', path)).status, path).to.equal(404)
      }
    })
  })
})
