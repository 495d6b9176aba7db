import { expect } from 'chai'
import { isParleyError } from '../../../../node/core/errors.js'
import type { Hash } from '../../../../node/core/ids.js'
import { createNodeCertificate } from '../../../../network/tls.js'
import { freePort } from '../../../../network/process.js'
import { parseBatch, serializeBatch } from '../../../../node/batch/payload.js'
import { createExchange, type Exchange } from '../../../../node/exchange/index.js'
import { makeBatch, makeNode, settle, startAll, type TestNode } from '../../../support/exchange-harness.js'

/**
 * The exchange's own decisions, before anything goes over the wire: its wiring refused loudly, the peers it trusts
 * (a certificate that does not parse, one registered by two nodes), and the sends it refuses at once.
 */
describe('exchange: wiring, trust and sends refused at once', () => {
  const started: TestNode[] = []
  afterEach(async () => {
    for (const n of started.splice(0)) await n.exchange.stop()
  })

  async function node(org: string): Promise<TestNode> {
    const n = await makeNode(org)
    started.push(n)
    return n
  }

  it('refuses handlers after its start, a second start, and a start after its stop', async () => {
    const a = await node('org0')
    await a.exchange.start()
    expect(() => a.exchange.onBlob(async () => {})).to.throw('the exchange takes its blob handler before it starts')
    const twice = await settle(a.exchange.start())
    expect(isParleyError(twice.err, 'INTERNAL') && twice.err.message).to.equal('the exchange is already started')
    const b = await node('org1')
    await b.exchange.stop()
    const afterStop = await settle(b.exchange.start())
    expect(isParleyError(afterStop.err, 'UNAVAILABLE') && afterStop.err.message).to.equal('the exchange is stopped')
  })

  it('refuses to start without its batch handler or its blob handler, naming the missing one', async () => {
    const tls = await createNodeCertificate('org0', 'node-org0')
    for (const [missing, wire] of [
      ['blob', (e: Exchange) => e.onBatch(async () => {})],
      ['batch', (e: Exchange) => e.onBlob(async () => {})],
    ] as const) {
      const exchange = createExchange({ host: '127.0.0.1', port: await freePort(), cert: tls.cert, key: tls.key, log: () => {}, codec: { parse: parseBatch, serialize: serializeBatch } })
      wire(exchange)
      const r = await settle(exchange.start())
      expect(isParleyError(r.err, 'INTERNAL') && r.err.message).to.equal(`the exchange starts only once it has its ${missing} handler`)
    }
  })

  it('can start after a start that failed on a busy port', async () => {
    const a = await node('org0')
    await a.exchange.start()
    const busy = await makeNode('org1', { port: a.port })
    const r = await settle(busy.exchange.start())
    expect((r.err as NodeJS.ErrnoException).code).to.equal('EADDRINUSE')
    await a.exchange.stop()
    started.splice(0)
    started.push(busy)
    await busy.exchange.start()
  })

  it('leaves out a peer whose certificate does not parse, logging it once, and trusts the others', async () => {
    const [a, b] = [await node('org0'), await node('org1')]
    const broken = { ...b.peer, node: 'did:firefly:node/broken', cert: 'not a certificate' }
    a.exchange.trust([broken, b.peer])
    a.exchange.trust([broken, b.peer])
    expect(a.logs).to.deep.equal(['exchange: left out peer did:firefly:node/broken (org1): its certificate does not parse'])
    b.exchange.trust([a.peer])
    await a.exchange.start()
    await b.exchange.start()
    await b.exchange.sendBatch(a.peer, makeBatch('org1'))
    expect(a.batches.map((x) => x.from.node)).to.deep.equal([b.peer.node])
  })

  it('attributes a certificate two peers registered to the first of them, logging it', async () => {
    const [a, b] = [await node('org0'), await node('org1')]
    const twin = { ...b.peer, node: 'did:firefly:node/twin' }
    a.exchange.trust([b.peer, twin])
    expect(a.logs).to.deep.equal([`exchange: peers ${b.peer.node} and did:firefly:node/twin registered the same certificate; it identifies ${b.peer.node}`])
    await startAll([b])
    await a.exchange.start()
    await b.exchange.sendBatch(a.peer, makeBatch('org1'))
    expect(a.batches.map((x) => x.from.node)).to.deep.equal([b.peer.node])
  })

  it('refuses a blob whose hash or size is malformed with BAD_REQUEST, reading none of it', async () => {
    const [a, b] = [await node('org0'), await node('org1')]
    let read = 0
    const content: AsyncIterable<Uint8Array> = {
      async *[Symbol.asyncIterator]() {
        read++
        yield new Uint8Array(1)
      },
    }
    const cases: [string, number, string][] = [
      ['A'.repeat(64), 1, `blob hash ${'A'.repeat(64)} is not a sha256 in lowercase hex`],
      ['ab', 1, 'blob hash ab is not a sha256 in lowercase hex'],
      ['a'.repeat(64), -1, 'blob size -1 is not a byte count'],
      ['a'.repeat(64), 1.5, 'blob size 1.5 is not a byte count'],
    ]
    for (const [hash, size, message] of cases) {
      const r = await settle(a.exchange.sendBlob(b.peer, { hash: hash as Hash, size }, content))
      expect(isParleyError(r.err, 'BAD_REQUEST') && r.err.message, message).to.equal(message)
    }
    expect(read).to.equal(0)
  })

  it('refuses every send once stopped, with UNAVAILABLE', async () => {
    const [a, b] = [await node('org0'), await node('org1')]
    await a.exchange.stop()
    const batch = await settle(a.exchange.sendBatch(b.peer, makeBatch('org0')))
    const blob = await settle(a.exchange.sendBlob(b.peer, { hash: 'a'.repeat(64) as Hash, size: 0 }, { async *[Symbol.asyncIterator]() {} }))
    for (const r of [batch, blob]) expect(isParleyError(r.err, 'UNAVAILABLE') && r.err.message).to.equal('the exchange is stopped')
  })
})
