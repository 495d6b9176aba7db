import { expect } from 'chai'
import { freePort } from '../../network/process.js'
import { serializeBatch } from '../../node/batch/payload.js'
import { ParleyError, isParleyError } from '../../node/core/errors.js'
import { createExchange } from '../../node/exchange/index.js'
import { deferred, FAST_RETRY, makeBatch, makeNode, rawRequest, settle, startAll, type TestNode } from '../support/exchange-harness.js'

describe('exchange: batches between three nodes on loopback (real mutual TLS)', () => {
  let a: TestNode
  let b: TestNode
  let c: TestNode

  before(async () => {
    ;[a, b, c] = await Promise.all([makeNode('org0'), makeNode('org1'), makeNode('org2')])
    await startAll([a, b, c])
  })
  after(async () => {
    await Promise.all([a, b, c].map((n) => n?.exchange.stop()))
  })
  beforeEach(() => {
    for (const n of [a, b, c]) {
      n.batches.length = 0
      n.logs.length = 0
      n.batchHandler = async (from, payload) => void n.batches.push({ from, payload })
    }
  })

  it('delivers a batch, attributed to the sending peer, and resolves only once the handler resolved', async () => {
    const stored = deferred()
    let handlerDone = false
    b.batchHandler = async (from, payload) => {
      b.batches.push({ from, payload })
      await stored.promise
      handlerDone = true
    }
    const batch = makeBatch('org0', 3)
    let sent = false
    const sending = a.exchange.sendBatch(b.peer, batch).then(() => (sent = true))
    while (b.batches.length === 0) await new Promise((r) => setTimeout(r, 5))
    await new Promise((r) => setTimeout(r, 100))
    expect(sent, 'the sender must not hear 204 before the handler resolved').to.equal(false)
    stored.resolve()
    await sending
    expect(handlerDone).to.equal(true)
    const [got] = b.batches
    expect(got!.from).to.deep.equal(a.peer)
    expect(serializeBatch(got!.payload)).to.equal(serializeBatch(batch))
  })

  it('sends to two peers at once, each attributing the batch to the sender', async () => {
    const batch = makeBatch('org0')
    await Promise.all([a.exchange.sendBatch(b.peer, batch), a.exchange.sendBatch(c.peer, batch), c.exchange.sendBatch(b.peer, makeBatch('org2'))])
    expect(b.batches.map((x) => x.from.org).sort()).to.deep.equal(['org0', 'org2'])
    expect(c.batches.map((x) => x.from.node)).to.deep.equal([a.peer.node])
  })

  it('300 concurrent sends to one peer all arrive, the sender pooling under the receiver\'s per-peer limit (no 429)', async () => {
    const batches = Array.from({ length: 300 }, () => makeBatch('org0', 1))
    const t0 = Date.now()
    await Promise.all(batches.map((x) => a.exchange.sendBatch(b.peer, x)))
    const ms = Date.now() - t0
    expect(b.batches.map((x) => x.payload.id).sort()).to.deep.equal(batches.map((x) => x.id).sort())
    expect(a.logs.filter((l) => l.includes('retrying')), a.logs.join('\n')).to.deep.equal([])
    expect(ms).to.be.below(10_000)
  })

  it('delivers the same batch twice (at least once): the handler sees both and the second resolves', async () => {
    const batch = makeBatch('org0')
    await a.exchange.sendBatch(b.peer, batch)
    await a.exchange.sendBatch(b.peer, batch)
    expect(b.batches.map((x) => x.payload.id)).to.deep.equal([batch.id, batch.id])
  })

  it('a handler refusing BAD_PEER_DATA gives the sender BAD_REQUEST at once, without a retry, and is logged', async () => {
    let calls = 0
    b.batchHandler = async () => {
      calls++
      throw new ParleyError('BAD_PEER_DATA', 'manifest hash does not verify')
    }
    const batch = makeBatch('org0')
    const r = await settle(a.exchange.sendBatch(b.peer, batch))
    expect(isParleyError(r.err, 'BAD_REQUEST'), String(r.err)).to.equal(true)
    expect((r.err as Error).message).to.contain('400 BAD_PEER_DATA: manifest hash does not verify')
    expect(calls).to.equal(1)
    expect(b.logs.some((l) => l.includes(`refused batch ${batch.id}`) && l.includes(a.peer.node) && l.includes('manifest hash does not verify'))).to.equal(true)
  })

  it('a handler failing otherwise gives 500 INTERNAL (message only), retried, then UNAVAILABLE', async () => {
    let calls = 0
    b.batchHandler = async () => {
      calls++
      throw new Error('database is on fire')
    }
    const r = await settle(a.exchange.sendBatch(b.peer, makeBatch('org0')))
    expect(isParleyError(r.err, 'UNAVAILABLE'), String(r.err)).to.equal(true)
    expect((r.err as Error).message).to.match(/500 INTERNAL: database is on fire \(gave up after 4 attempts, p2p\.retry\)/)
    expect(calls).to.equal(FAST_RETRY.attempts)
    expect(a.logs.filter((l) => l.includes('retrying')), 'one log line per distinct problem').to.have.length(1)
  })

  it('a handler saying UNAVAILABLE gives 503, retried; success once the handler recovers', async () => {
    let calls = 0
    b.batchHandler = async (from, payload) => {
      if (++calls < 3) throw new ParleyError('UNAVAILABLE', 'database closing')
      b.batches.push({ from, payload })
    }
    await a.exchange.sendBatch(b.peer, makeBatch('org0'))
    expect(calls).to.equal(3)
    expect(b.batches).to.have.length(1)
  })

  it('refuses a malformed body 400 BAD_PEER_DATA without calling the handler, and logs it', async () => {
    const url = `${b.peer.endpoint}/api/v1/batches`
    const json = { 'content-type': 'application/json' }
    const cases: Array<[string, string | Buffer]> = [
      ['not JSON', 'this is not json'],
      ['JSON of another shape', JSON.stringify({ id: 'x', payload: {} })],
      ['a batch with a bad id', serializeBatch(makeBatch('org0')).replace(/"id":"[0-9a-f-]{36}"/, '"id":"nope"')],
      ['not UTF-8', Buffer.from([0x7b, 0xff, 0xfe, 0x7d])],
    ]
    for (const [what, body] of cases) {
      const r = await rawRequest(url, a.tls, { method: 'POST', headers: json, body })
      expect(r.status, what).to.equal(400)
      expect(JSON.parse(r.body).error, what).to.match(/^BAD_PEER_DATA: /)
    }
    const wrongType = await rawRequest(url, a.tls, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: serializeBatch(makeBatch('org0')) })
    expect(wrongType.status).to.equal(415)
    const wrongMethod = await rawRequest(url, a.tls, { method: 'GET' })
    expect(wrongMethod.status).to.equal(405)
    expect(wrongMethod.headers.allow).to.equal('POST')
    expect((await rawRequest(`${b.peer.endpoint}/api/v1/nothing`, a.tls, { method: 'GET' })).status).to.equal(404)
    expect((await rawRequest(`${b.peer.endpoint}/api/v1/ping`, a.tls, { method: 'HEAD' })).status).to.equal(204)
    expect(b.batches).to.have.length(0)
    expect(b.logs.filter((l) => l.startsWith(`exchange: refused a batch from ${a.peer.node}`))).to.have.length(cases.length + 1)
  })
})

describe('exchange: limits, a peer that is down, and stopping', () => {
  it('refuses a batch over maxBatchBytes 413 from its length: BAD_REQUEST for the sender, no handler', async () => {
    const [a, b] = await Promise.all([makeNode('org0'), makeNode('org1', { maxBatchBytes: 4096 })])
    try {
      await startAll([a, b])
      const r = await settle(a.exchange.sendBatch(b.peer, makeBatch('org0', 40)))
      expect(isParleyError(r.err, 'BAD_REQUEST'), String(r.err)).to.equal(true)
      expect((r.err as Error).message).to.match(/413 PAYLOAD_TOO_LARGE/)
      // The same through a chunked body, which has no length to refuse up front: cut off as it passes the limit.
      async function* chunked(): AsyncIterable<Uint8Array> {
        yield Buffer.from(serializeBatch(makeBatch('org0', 40)))
      }
      const raw = await rawRequest(`${b.peer.endpoint}/api/v1/batches`, a.tls, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chunked() })
      expect(raw.status).to.equal(413)
      expect(b.batches).to.have.length(0)
      await a.exchange.sendBatch(b.peer, makeBatch('org0', 1))
      expect(b.batches).to.have.length(1)

      // Over 64 KiB the sender waits for 100 Continue: refused from the headers, accepted by a peer with room.
      const big = makeBatch('org0', 800)
      expect(serializeBatch(big).length).to.be.above(64 * 1024)
      const refused = await settle(a.exchange.sendBatch(b.peer, big))
      expect((refused.err as Error).message).to.match(/413 PAYLOAD_TOO_LARGE/)
      const roomy = await makeNode('org2')
      await startAll([roomy])
      roomy.exchange.trust([a.peer])
      await a.exchange.sendBatch(roomy.peer, big)
      expect(serializeBatch(roomy.batches[0]!.payload)).to.equal(serializeBatch(big))
      await roomy.exchange.stop()
    } finally {
      await Promise.all([a.exchange.stop(), b.exchange.stop()])
    }
  })

  it('a peer that is down: UNAVAILABLE after the retries; a peer that comes up during them: delivered', async () => {
    const a = await makeNode('org0')
    const port = await freePort()
    const down = { node: 'did:firefly:node/down', org: 'org1', endpoint: `https://127.0.0.1:${port}`, cert: a.tls.cert }
    try {
      await startAll([a])
      const t0 = Date.now()
      const r = await settle(a.exchange.sendBatch(down, makeBatch('org0')))
      expect(isParleyError(r.err, 'UNAVAILABLE'), String(r.err)).to.equal(true)
      expect((r.err as Error).message).to.match(/ECONNREFUSED.*gave up after 4 attempts, p2p\.retry/)
      expect(Date.now() - t0).to.be.within(300, 3000) // 50 + 100 + 200 ms of waits

      // Now the peer starts while the sender is waiting out its backoff.
      const b = await makeNode('org1', { port })
      const slow = await makeNode('org0', { retry: { attempts: 6, firstWaitMs: 100, maxWaitMs: 400 } }, a.tls)
      slow.exchange.trust([b.peer])
      b.exchange.trust([slow.peer])
      const sending = slow.exchange.sendBatch(b.peer, makeBatch('org0'))
      await new Promise((r) => setTimeout(r, 150))
      await b.exchange.start()
      await sending
      expect(b.batches).to.have.length(1)
      expect(slow.logs.some((l) => l.includes('ECONNREFUSED') && l.includes('retrying'))).to.equal(true)
      await Promise.all([b.exchange.stop(), slow.exchange.stop()])
    } finally {
      await a.exchange.stop()
    }
  })

  it('refuses what cannot be sent at all (not https, not a certificate) with BAD_REQUEST, no attempt', async () => {
    const a = await makeNode('org0')
    const b = await makeNode('org1')
    for (const to of [{ ...b.peer, endpoint: 'http://127.0.0.1:1' }, { ...b.peer, endpoint: 'nowhere' }, { ...b.peer, cert: 'not a certificate' }]) {
      const r = await settle(a.exchange.sendBatch(to, makeBatch('org0')))
      expect(isParleyError(r.err, 'BAD_REQUEST'), String(r.err)).to.equal(true)
    }
  })

  it('stop(): new sends and sends waiting out a backoff reject UNAVAILABLE; in-flight ones (both sides) finish', async () => {
    const [a, b] = await Promise.all([makeNode('org0', { retry: { attempts: 10, firstWaitMs: 5000, maxWaitMs: 5000 } }), makeNode('org1')])
    await startAll([a, b])
    const release = deferred()
    let entered = 0
    b.batchHandler = async (from, payload) => {
      entered++
      await release.promise
      b.batches.push({ from, payload })
    }
    // One send in flight (its handler holds), one waiting out a 5 s backoff against a peer that is down.
    const inFlight = a.exchange.sendBatch(b.peer, makeBatch('org0'))
    const down = { ...b.peer, node: 'did:firefly:node/down', endpoint: `https://127.0.0.1:${await freePort()}` }
    const backingOff = settle(a.exchange.sendBatch(down, makeBatch('org0')))
    while (entered === 0) await new Promise((r) => setTimeout(r, 5))
    await new Promise((r) => setTimeout(r, 50))

    const t0 = Date.now()
    const stoppingA = a.exchange.stop()
    const stoppingB = b.exchange.stop()
    const waited = await backingOff
    expect(isParleyError(waited.err, 'UNAVAILABLE'), String(waited.err)).to.equal(true)
    expect((waited.err as Error).message).to.match(/stopping/)
    expect(Date.now() - t0, 'a backoff is cut short by stop').to.be.below(1000)
    const late = await settle(a.exchange.sendBatch(b.peer, makeBatch('org0')))
    expect(isParleyError(late.err, 'UNAVAILABLE'), String(late.err)).to.equal(true)

    // B, stopping, takes no new connection while its in-flight request finishes.
    const meanwhile = await settle(rawRequest(`${b.peer.endpoint}/api/v1/ping`, a.tls, { method: 'HEAD' }))
    expect(String(meanwhile.err)).to.match(/ECONNREFUSED/)
    expect(b.batches).to.have.length(0)
    release.resolve()
    await inFlight
    expect(b.batches).to.have.length(1)
    await Promise.all([stoppingA, stoppingB])
    const after = await settle(rawRequest(`${b.peer.endpoint}/api/v1/ping`, a.tls, { method: 'HEAD' }))
    expect(String(after.err)).to.match(/ECONNREFUSED/)
  })

  it('start() fails loudly on wiring mistakes and on a busy port', async () => {
    const a = await makeNode('org0')
    const bare = await makeNode('org1')
    try {
      await a.exchange.start()
      expect(() => a.exchange.onBatch(async () => {})).to.throw(/before it starts/)
      const busy = await makeNode('org2', { port: a.port })
      const r = await settle(busy.exchange.start())
      expect((r.err as NodeJS.ErrnoException).code).to.equal('EADDRINUSE')
      expect((r.err as Error).message).to.contain(String(a.port))
      const noHandlers = createExchange({ host: '127.0.0.1', port: bare.port, cert: bare.tls.cert, key: bare.tls.key, log: () => {}, codec: { parse: () => makeBatch('x'), serialize: () => '' } })
      const missing = await settle(noHandlers.start())
      expect(isParleyError(missing.err, 'INTERNAL'), String(missing.err)).to.equal(true)
    } finally {
      await a.exchange.stop()
    }
  })
})
