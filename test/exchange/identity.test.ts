import { expect } from 'chai'
import { X509Certificate } from 'node:crypto'
import { createNodeCertificate } from '../../network/tls.js'
import { serializeBatch } from '../../node/batch/payload.js'
import { isParleyError } from '../../node/core/errors.js'
import { makeBatch, makeNode, rawRequest, settle, startAll, type TestNode } from '../support/exchange-harness.js'
import { issueCertificate } from '../support/certificates.js'

describe('exchange: who a peer is, both ways (exact certificates)', () => {
  let a: TestNode // org0
  let b: TestNode // org1, the receiver in most cases
  let m: TestNode // org2, a trusted member that misbehaves

  before(async () => {
    ;[a, b, m] = await Promise.all([makeNode('org0'), makeNode('org1'), makeNode('org2')])
    await startAll([a, b, m])
  })
  after(async () => {
    await Promise.all([a, b, m].map((n) => n?.exchange.stop()))
  })
  beforeEach(() => {
    for (const n of [a, b, m]) {
      n.batches.length = 0
      n.logs.length = 0
    }
  })

  it('a client certificate nobody registered: 401, logged, handler never called; the sender sees UNAVAILABLE', async () => {
    const stranger = await makeNode('org9')
    stranger.exchange.trust([b.peer])
    const r = await settle(stranger.exchange.sendBatch(b.peer, makeBatch('org9')))
    expect(isParleyError(r.err, 'UNAVAILABLE'), String(r.err)).to.equal(true)
    expect((r.err as Error).message).to.match(/401 UNAUTHORIZED: the client certificate is not one a registered node published/)
    expect(b.batches).to.have.length(0)
    const refusals = b.logs.filter((l) => l.includes('refused POST /api/v1/batches') && l.includes('O=org9'))
    expect(refusals, b.logs.join('\n')).to.have.length(1) // four attempts, one line a minute per certificate
    expect(refusals[0]).to.contain(new X509Certificate(stranger.tls.cert).fingerprint256)

    // Without any client certificate: answered 401 too.
    const bare = await rawRequest(`${b.peer.endpoint}/api/v1/batches`, undefined, { method: 'POST', headers: { 'content-type': 'application/json' }, body: serializeBatch(makeBatch('org9')) })
    expect(bare.status).to.equal(401)
    expect(JSON.parse(bare.body).error).to.match(/^UNAUTHORIZED: no client certificate/)
    expect(b.batches).to.have.length(0)
    await stranger.exchange.stop()
  })

  it("a certificate a trusted member signed with another org's subject: passes TLS, refused 401, logged", async () => {
    const forged = await issueCertificate(m.tls, 'org0', a.name)
    const x = new X509Certificate(forged.cert)
    expect(x.subject).to.contain('O=org0')
    expect(x.verify(new X509Certificate(m.tls.cert).publicKey)).to.equal(true)
    const r = await rawRequest(`${b.peer.endpoint}/api/v1/batches`, forged, { method: 'POST', headers: { 'content-type': 'application/json' }, body: serializeBatch(makeBatch('org0')) })
    expect(r.status).to.equal(401)
    expect(b.batches).to.have.length(0)
    expect(b.logs.some((l) => l.includes('O=org0') && l.includes(x.fingerprint256))).to.equal(true)

    // The same forgery through an exchange: the 401 is UNAVAILABLE (indistinguishable from not registered yet).
    const poser = await makeNode('org0', {}, forged)
    const sent = await settle(poser.exchange.sendBatch(b.peer, makeBatch('org0')))
    expect(isParleyError(sent.err, 'UNAVAILABLE'), String(sent.err)).to.equal(true)
    expect(b.batches).to.have.length(0)
    await poser.exchange.stop()
  })

  it('trust() replaces the set: a peer left out is refused from its next request, one added is accepted', async () => {
    await a.exchange.sendBatch(b.peer, makeBatch('org0'))
    b.exchange.trust([m.peer])
    const r = await settle(a.exchange.sendBatch(b.peer, makeBatch('org0')))
    expect((r.err as Error).message).to.match(/401/)
    b.exchange.trust([a.peer, m.peer, { ...a.peer, node: 'did:firefly:node/broken', cert: '-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n' }])
    b.exchange.trust([a.peer, m.peer, { ...a.peer, node: 'did:firefly:node/broken', cert: '-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n' }])
    expect(b.logs.filter((l) => l.includes('broken') && l.includes('does not parse')), 'logged once').to.have.length(1)
    await a.exchange.sendBatch(b.peer, makeBatch('org0'))
    expect(b.batches.map((x) => x.from.node)).to.deep.equal([a.peer.node, a.peer.node])
  })

  it('a server presenting a certificate other than the registered one: the client refuses before sending (UNAVAILABLE)', async () => {
    // An unrelated certificate at b's address: it does not chain to the pinned one, the handshake fails.
    const other = await makeNode('org1', {}, await createNodeCertificate('org1', b.name))
    const posing = { ...b.peer, endpoint: other.peer.endpoint }
    other.exchange.trust([a.peer])
    await other.exchange.start()
    const r1 = await settle(a.exchange.sendBatch(posing, makeBatch('org0')))
    expect(isParleyError(r1.err, 'UNAVAILABLE'), String(r1.err)).to.equal(true)
    expect(other.batches).to.have.length(0)

    // A certificate signed by b's own (so it chains to the pinned CA, and names org1): refused by the exact match.
    const issued = await issueCertificate(b.tls, 'org1', `${b.name}-2`) // not b's own name, or it reads as self-signed
    const chained = await makeNode('org1', {}, issued)
    chained.exchange.trust([a.peer])
    await chained.exchange.start()
    const r2 = await settle(a.exchange.sendBatch({ ...b.peer, endpoint: chained.peer.endpoint }, makeBatch('org0')))
    expect(isParleyError(r2.err, 'UNAVAILABLE'), String(r2.err)).to.equal(true)
    expect((r2.err as Error).message).to.contain(`not the one ${b.peer.node} at ${chained.peer.endpoint} registered`)
    expect(chained.batches, 'nothing reached the impostor').to.have.length(0)
    // The server itself would have taken a's request: the refusal was the client's pin.
    expect((await rawRequest(`${chained.peer.endpoint}/api/v1/ping`, a.tls, { method: 'HEAD' })).status).to.equal(204)
    await Promise.all([other.exchange.stop(), chained.exchange.stop()])
  })

  it('at most quotas.inFlightRequestsPerOrg requests from one org at once: past it 429, which the sender retries', async () => {
    const narrow = await makeNode('org3', { quotas: { inFlightRequestsPerOrg: 2 } })
    await startAll([narrow])
    narrow.exchange.trust([a.peer])
    let held = 0
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    narrow.batchHandler = async (from, payload) => {
      held++
      await gate
      narrow.batches.push({ from, payload })
    }
    const url = `${narrow.peer.endpoint}/api/v1/batches`
    const body = serializeBatch(makeBatch('org0'))
    const first = [rawRequest(url, a.tls, { method: 'POST', headers: { 'content-type': 'application/json' }, body }), rawRequest(url, a.tls, { method: 'POST', headers: { 'content-type': 'application/json' }, body })]
    while (held < 2) await new Promise((r) => setTimeout(r, 5))
    const third = await rawRequest(url, a.tls, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    expect(third.status).to.equal(429)
    expect(JSON.parse(third.body).error).to.match(/^TOO_MANY_REQUESTS: /)
    const viaExchange = a.exchange.sendBatch(narrow.peer, makeBatch('org0'))
    await new Promise((r) => setTimeout(r, 60))
    release()
    expect((await Promise.all(first)).map((x) => x.status)).to.deep.equal([204, 204])
    await viaExchange
    expect(narrow.batches).to.have.length(3)
    await narrow.exchange.stop()
  })
})
