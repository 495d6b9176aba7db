import { expect } from 'chai'
import { join } from 'node:path'
import { serializeBatch } from '../../../../node/batch/payload.js'
import { broadcastContext } from '../../../../node/core/hashes.js'
import { explainWait } from '../../../../node/aggregator/explain.js'
import type { BatchPayload, PinnedBatch } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { MemoryStorage } from '../../../support/storage.js'
import { AggregatorMember, broadcastBatch, groupOf, peerOf, pinLogOf, privateBatch, registeredOrgs, type PinLog } from '../../../support/aggregator-member.js'

/**
 * An author pins its own private batch's (id, hash) a second time as a broadcast, with a payload reference whose
 * content is no broadcast batch of that pair. Member X holds the private batch before any pin is read; member Y reads
 * the pins and fetches that payload first, and is delivered the batch only then (or after a restart). Both must end in
 * the same state: the same rows, pins used and events, the same explanation, whatever came first.
 */
describe('private receiver: a private batch pinned again by its own author as a broadcast', function () {
  this.timeout(60_000)
  const temp = new TempDirs()
  const [org0, org1, org2] = registeredOrgs(3)
  const group = groupOf([org0!, org1!, org2!])
  let storage: MemoryStorage
  const dirs: string[] = []
  const open: AggregatorMember[] = []
  beforeEach(() => {
    storage = new MemoryStorage()
  })
  afterEach(async () => {
    for (const m of open.splice(0)) await m.close()
  })
  after(() => temp.cleanup())

  async function member(dir?: string): Promise<AggregatorMember> {
    const path = dir ?? join(await temp.make('parley-own-pin-'), 'db')
    dirs.push(path)
    const m = await AggregatorMember.open(path, storage, org1!)
    open.push(m)
    if (!dir) await m.register([org0!, org1!, org2!], [group])
    return m
  }
  async function publish(bytes: string): Promise<string> {
    return storage.upload(new TextEncoder().encode(bytes))
  }
  const deliver = async (m: AggregatorMember, ...bs: BatchPayload[]) => {
    for (const b of bs) expect(await m.deliver(peerOf(org0!), b), `batch ${b.id} taken`).to.equal(undefined)
  }

  /** What must be alike on every member: rows of the batch's id, its pins, the messages' states, the events. */
  function stateOf(m: AggregatorMember, ...bs: BatchPayload[]) {
    const ids = bs.flatMap((b) => b.messages.map((x) => x.header.id))
    return {
      batches: bs.map((b) => m.r.batches.byIdHash(b.id, b.hash)).map((b) => b && { type: b.type, state: b.state, key: b.key, reason: b.reason ?? null }),
      pins: bs.flatMap((b) => m.r.pins.ofBatch(b.id).map((p) => ({ batch: p.batchId, index: p.index, hash: p.hash, masked: p.masked, signer: p.signer, used: p.dispatched }))),
      messages: ids.map((id) => m.state(id)),
      confirmed: m.confirmed().sort(),
    }
  }
  function explained(m: AggregatorMember, b: BatchPayload): string | undefined {
    const message = m.r.messages.byRef(b.messages[0]!.header.id, b.messages[0]!.hash)!
    const wait = m.agg.explain(message, m.r.batches.byIdHash(b.id, b.hash)!)?.wait
    return wait && explainWait({ ...m.r, explain: (x, y) => m.agg.explain(x, y) }, wait).detail
  }

  /** org0's private batch P (nonce 0), its next one Q (nonce 1), and org2's broadcast on `news`. */
  function fixture() {
    const p = privateBatch(org0!, group, [['orders']], [[0]])
    const q = privateBatch(org0!, group, [['orders']], [[1]])
    return { p, q, news: broadcastBatch('org2', org2!.key, [['news']]) }
  }
  /** org0's broadcast pin of P's pair: P's own contexts and one on `news`, naming `ref`. */
  const rogue = (p: BatchPayload, ref: string): PinLog => ({ ...pinLogOf({ payload: p }), payloadRef: ref, contexts: [...pinLogOf({ payload: p }).contexts, broadcastContext('news')] })

  it('confirms the batch on a member that fetched the rogue payload first, as on one that held the batch', async () => {
    const { p, q, news } = fixture()
    const junk = await publish('{"not":"a batch"}')
    const pins = [pinLogOf({ payload: p }), rogue(p, junk), pinLogOf({ payload: q }), pinLogOf({ payload: news, ref: await publish(serializeBatch(news)) })]
    const [x, y] = [await member(), await member()]
    await deliver(x, p, q)
    await x.chain(pins)
    await y.chain(pins)
    expect(y.r.batches.byIdHash(p.id, p.hash)?.state, 'the rogue payload refused on Y').to.equal('refused')
    await deliver(y, p, q)
    expect(stateOf(x, p, q, news).messages).to.deep.equal(['confirmed', 'confirmed', 'confirmed'])
    expect(stateOf(y, p, q, news)).to.deep.equal(stateOf(x, p, q, news))
  })

  it('takes the batch after a restart that came between the refusal and its delivery', async () => {
    const { p, q, news } = fixture()
    const pins = [pinLogOf({ payload: p }), rogue(p, await publish('{"not":"a batch"}')), pinLogOf({ payload: q }), pinLogOf({ payload: news, ref: await publish(serializeBatch(news)) })]
    const x = await member()
    await deliver(x, p, q)
    await x.chain(pins)
    let y = await member()
    await y.chain(pins)
    await y.close()
    open.splice(open.indexOf(y), 1)
    y = await member(dirs[dirs.length - 1])
    y.fetcher.start()
    await y.settle()
    await deliver(y, p, q)
    expect(stateOf(y, p, q, news)).to.deep.equal(stateOf(x, p, q, news))
    expect(stateOf(y, p, q, news).messages).to.deep.equal(['confirmed', 'confirmed', 'confirmed'])
  })

  it('refuses a rogue payload that is the batch itself, published as a broadcast or as it is', async () => {
    for (const type of ['broadcast', 'private'] as const) {
      const { p, q, news } = fixture()
      const copy = await publish(serializeBatch({ ...p, type }))
      const pins = [pinLogOf({ payload: p }), rogue(p, copy), pinLogOf({ payload: q }), pinLogOf({ payload: news, ref: await publish(serializeBatch(news)) })]
      const [x, y] = [await member(), await member()]
      await deliver(x, p, q)
      await x.chain(pins)
      await y.chain(pins)
      expect(y.r.batches.byIdHash(p.id, p.hash)?.state, `a ${type} copy refused on Y`).to.equal('refused')
      await deliver(y, p, q)
      expect(stateOf(x, p, q, news).messages, type).to.deep.equal(['confirmed', 'confirmed', 'confirmed'])
      expect(stateOf(y, p, q, news), type).to.deep.equal(stateOf(x, p, q, news))
    }
  })

  it('lets a rogue pin that came first on chain decide nothing of the batch, on a holder as on a member that had it later', async () => {
    const { p, q, news } = fixture()
    const junk = await publish('{"not":"a batch"}')
    const pins = [rogue(p, junk), pinLogOf({ payload: p }), pinLogOf({ payload: q }), pinLogOf({ payload: news, ref: await publish(serializeBatch(news)) })]
    const [x, y] = [await member(), await member()]
    await deliver(x, p, q)
    // X reads every pin before the rogue payload's verdict, Y after it.
    for (const log of pins) await x.pin(log)
    const held = x.announced.slice()
    expect(stateOf(x, p, q, news).messages, 'nothing decided while the rogue pin waits for its payload').to.deep.equal(['pending', 'pending', undefined])
    for (const a of held) await x.fetch(a)
    await y.chain(pins)
    await deliver(y, p, q)
    const s = stateOf(x, p, q, news)
    expect(s.messages, 'its own pin was a second pin of the pair: the batch waits; the topic of news is free').to.deep.equal(['pending', 'pending', 'confirmed'])
    expect(stateOf(y, p, q, news)).to.deep.equal(s)
    expect(explained(y, p)).to.equal(explained(x, p))
    expect(explained(x, p)).to.contain('payload reference')
  })

  it('holds the rogue pin’s topics while its payload has not arrived, on a holder as on a member without the batch', async () => {
    const { p, q, news } = fixture()
    const never: PinnedBatch[] = []
    const pins = [pinLogOf({ payload: p }), rogue(p, `ref-${'0'.repeat(64)}`), pinLogOf({ payload: q }), pinLogOf({ payload: news, ref: await publish(serializeBatch(news)) })]
    const [x, y] = [await member(), await member()]
    await deliver(x, p, q)
    for (const m of [x, y]) {
      for (const log of pins) await m.pin(log)
      never.push(m.announced[0]!)
      await m.fetch(m.announced[1]!)
    }
    expect(never.map((n) => n.payloadRef)).to.deep.equal([pins[1]!.payloadRef, pins[1]!.payloadRef])
    await deliver(y, p, q)
    expect(stateOf(x, p, q, news).messages).to.deep.equal(['confirmed', 'confirmed', 'pending'])
    expect(stateOf(y, p, q, news)).to.deep.equal(stateOf(x, p, q, news))
    expect(explained(y, news)).to.equal(explained(x, news))
  })
})
