import { expect } from 'chai'
import { once } from 'node:events'
import tls, { type TLSSocket } from 'node:tls'
import { createNodeCertificate, type TlsMaterial } from '../../network/tls.js'
import { serializeBatch } from '../../node/batch/payload.js'
import { ParleyError, isParleyError } from '../../node/core/errors.js'
import type { Hash } from '../../node/core/ids.js'
import type { ExchangeQuotas } from '../../node/exchange/types.js'
import { deferred, makeBatch, makeNode, rawRequest, settle, type TestNode } from '../support/exchange-harness.js'

const json = { 'content-type': 'application/json' }

describe('exchange: quotas on what a peer org may hold here (real mutual TLS)', () => {
  let a1: TestNode // org0's first node
  let a2: TestNode // org0's second node, another certificate
  let c: TestNode // org2
  const open: TestNode[] = []
  const sockets: TLSSocket[] = []

  before(async () => {
    ;[a1, a2, c] = await Promise.all([makeNode('org0'), makeNode('org0', {}, await createNodeCertificate('org0', 'node-org0-b')), makeNode('org2')])
    a2.peer = { ...a2.peer, node: 'did:firefly:node/node-org0-b' }
  })
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy()
    await Promise.all(open.splice(0).map((n) => n.exchange.stop()))
  })

  /** A receiver (org1) with these quotas, trusting both nodes of org0 and org2's. */
  async function receiver(quotas: Partial<ExchangeQuotas>): Promise<TestNode> {
    const b = await makeNode('org1', { quotas })
    b.exchange.trust([a1.peer, a2.peer, c.peer])
    await b.exchange.start()
    open.push(b)
    return b
  }

  /** A connection held open after one ping (so the server has counted it): answers the ping's status line. */
  async function hold(b: TestNode, as: TlsMaterial): Promise<string> {
    const s = tls.connect({ host: '127.0.0.1', port: b.port, cert: as.cert, key: as.key, rejectUnauthorized: false })
    sockets.push(s)
    await once(s, 'secureConnect')
    s.write('HEAD /api/v1/ping HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n')
    const [data] = (await once(s, 'data')) as [Buffer]
    return data.toString('latin1').split('\r\n')[0]!
  }

  const ping = (b: TestNode, as: TlsMaterial) => rawRequest(`${b.peer.endpoint}/api/v1/ping`, as, { method: 'GET' })
  const errorOf = (body: string): string => (JSON.parse(body) as { error: string }).error

  it('requests in flight: one share per org over all its nodes, past it 429 naming quotas.inFlightRequestsPerOrg', async () => {
    const b = await receiver({ inFlightRequestsPerOrg: 2 })
    const gate = deferred()
    let held = 0
    b.batchHandler = async (from, payload) => {
      if (from.org === 'org0') {
        held++
        await gate.promise
      }
      b.batches.push({ from, payload })
    }
    const url = `${b.peer.endpoint}/api/v1/batches`
    const first = [rawRequest(url, a1.tls, { method: 'POST', headers: json, body: serializeBatch(makeBatch('org0')) }), rawRequest(url, a2.tls, { method: 'POST', headers: json, body: serializeBatch(makeBatch('org0')) })]
    while (held < 2) await new Promise((r) => setTimeout(r, 5))
    const third = await rawRequest(url, a2.tls, { method: 'POST', headers: json, body: serializeBatch(makeBatch('org0')) })
    expect(third.status).to.equal(429)
    expect(errorOf(third.body)).to.match(/^TOO_MANY_REQUESTS: org org0 already has 2 requests in flight here over all its nodes .*\(quotas.inFlightRequestsPerOrg\)$/)
    expect(b.logs.some((l) => l.includes('quotas.inFlightRequestsPerOrg') && l.includes(a2.peer.node))).to.equal(true)
    // Another org has its own share.
    expect((await rawRequest(url, c.tls, { method: 'POST', headers: json, body: serializeBatch(makeBatch('org2')) })).status).to.equal(204)
    gate.resolve()
    expect((await Promise.all(first)).map((r) => r.status)).to.deep.equal([204, 204])
  })

  it('batch bytes in flight: one share per org, held as bytes arrive, past it 429 naming quotas.inFlightBatchBytesPerOrg', async () => {
    const one = serializeBatch(makeBatch('org0', 40))
    const b = await receiver({ inFlightBatchBytesPerOrg: Math.floor(one.length * 1.5) })
    const gate = deferred()
    let held = 0
    b.batchHandler = async (from, payload) => {
      held++
      await gate.promise
      b.batches.push({ from, payload })
    }
    const url = `${b.peer.endpoint}/api/v1/batches`
    const first = rawRequest(url, a1.tls, { method: 'POST', headers: json, body: one })
    while (held < 1) await new Promise((r) => setTimeout(r, 5))
    // Declared: refused from its length. Chunked (no length): cut off once what arrived passes the share.
    const declared = await rawRequest(url, a2.tls, { method: 'POST', headers: json, body: serializeBatch(makeBatch('org0', 40)) })
    expect(declared.status).to.equal(429)
    expect(errorOf(declared.body)).to.match(/^TOO_MANY_REQUESTS: org org0 already has \d+ bytes of batches in flight here over all its nodes; .*\(quotas.inFlightBatchBytesPerOrg\)$/)
    const text = Buffer.from(serializeBatch(makeBatch('org0', 40)))
    // Cut off mid-body: the 429 (or, when the socket closed while the client still wrote, no answer) and a log line.
    const chunked = await settle(rawRequest(url, a2.tls, {
      method: 'POST',
      headers: json,
      body: (async function* () {
        for (let at = 0; at < text.length; at += 1024) yield text.subarray(at, at + 1024)
      })(),
    }))
    if (chunked.ok) {
      expect(chunked.ok.status).to.equal(429)
      expect(errorOf(chunked.ok.body)).to.contain('quotas.inFlightBatchBytesPerOrg')
    }
    expect(b.logs.filter((l) => l.includes('quotas.inFlightBatchBytesPerOrg')), 'both refused, and logged').to.have.length(2)
    gate.resolve()
    expect((await first).status).to.equal(204)
    expect(held, 'neither refused batch reached the handler').to.equal(1)
  })

  it('connections: per certificate, per org over its nodes, and for unregistered certificates together, each 429 naming its quota', async () => {
    const b = await receiver({ connectionsPerCertificate: 2, connectionsPerOrg: 3, unregisteredConnections: 1 })
    expect([await hold(b, a1.tls), await hold(b, a1.tls)]).to.deep.equal(['HTTP/1.1 204 No Content', 'HTTP/1.1 204 No Content'])
    const third = await ping(b, a1.tls)
    expect(third.status).to.equal(429)
    expect(errorOf(third.body)).to.match(/^TOO_MANY_REQUESTS: certificate sha256 .* already has 2 connections open here \(quotas.connectionsPerCertificate\)$/)
    expect(third.headers.connection).to.equal('close')
    expect(await hold(b, a2.tls)).to.equal('HTTP/1.1 204 No Content')
    const fourth = await ping(b, a2.tls)
    expect(errorOf(fourth.body)).to.equal('TOO_MANY_REQUESTS: org org0 already has 3 connections open here over all its nodes (quotas.connectionsPerOrg)')
    expect((await ping(b, c.tls)).status, 'another org').to.equal(204)

    const [s1, s2] = await Promise.all([createNodeCertificate('org9', 'stranger-1'), createNodeCertificate('org9', 'stranger-2')])
    expect(await hold(b, s1)).to.equal('HTTP/1.1 401 Unauthorized')
    const crowd = await ping(b, s2)
    expect(errorOf(crowd.body)).to.contain('(quotas.unregisteredConnections)')
    expect((await ping(b, c.tls)).status, 'strangers do not crowd out members').to.equal(204)

    // A connection closed gives its place back.
    sockets[0]!.destroy()
    let again = await ping(b, a1.tls)
    for (let i = 0; i < 50 && again.status !== 204; i++) again = await ping(b, a1.tls)
    expect(again.status).to.equal(204)
  })

  it('connections in all: past quotas.connections a new connection is dropped at once, and logged', async () => {
    const b = await receiver({ connections: 2 })
    await hold(b, a1.tls)
    await hold(b, c.tls)
    const dropped = await settle(ping(b, a2.tls))
    expect(dropped.err, 'no answer: the connection was dropped').to.be.instanceOf(Error)
    expect(b.logs.some((l) => l.includes('p2p: dropped a connection') && l.includes('(quotas.connections)'))).to.equal(true)
  })

  it('refusal lines: at most quotas.refusalLinesPerMinute over all certificates, then one line with the count', async () => {
    const b = await receiver({ refusalLinesPerMinute: 3 })
    const strangers = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => createNodeCertificate('org9', `fresh-${i}`)))
    for (const s of strangers) expect((await ping(b, s)).status).to.equal(401)
    expect(b.logs.filter((l) => l.startsWith('p2p: refused'))).to.have.length(3)
    await b.exchange.stop()
    expect(b.logs.filter((l) => l.startsWith('p2p: refused'))).to.have.length(3)
    expect(b.logs.filter((l) => /^p2p: 3 more refusal\(s\) in the last minute were not logged.*\(quotas.refusalLinesPerMinute\)$/.test(l))).to.have.length(1)
  })

  it("a blob its handler refuses for its org's quota (507): never uploaded, the sender hears STORAGE_FULL and retries later", async () => {
    const b = await receiver({})
    let calls = 0
    b.blobHandler = async () => {
      calls++
      throw new ParleyError('STORAGE_FULL', 'org org0 already has 1073741824 bytes here in blobs that no message refers to (quotas.unreferencedBlobBytesPerOrg)')
    }
    let reads = 0
    const content: AsyncIterable<Uint8Array> = {
      async *[Symbol.asyncIterator]() {
        reads++
        yield new Uint8Array(1000)
      },
    }
    a1.exchange.trust([b.peer])
    const sent = await settle(a1.exchange.sendBlob(b.peer, { hash: 'f'.repeat(64) as Hash, size: 1000 }, content))
    expect(isParleyError(sent.err, 'UNAVAILABLE'), String(sent.err)).to.equal(true)
    expect((sent.err as Error).message).to.contain('507 STORAGE_FULL').and.contain('quotas.unreferencedBlobBytesPerOrg')
    expect(calls).to.be.greaterThan(1)
    expect(reads, 'the body was never asked for').to.equal(0)
    expect(b.logs.some((l) => l.includes('refused blob') && l.includes('quotas.unreferencedBlobBytesPerOrg'))).to.equal(true)
  })
})
