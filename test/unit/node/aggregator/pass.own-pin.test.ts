import { expect } from 'chai'
import { join } from 'node:path'
import { serializeBatch } from '../../../../node/batch/payload.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { broadcastContext, messageHash } from '../../../../node/core/hashes.js'
import { newId, type TxId } from '../../../../node/core/ids.js'
import type { BatchPayload } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { MemoryStorage } from '../../../support/storage.js'
import { AggregatorMember, broadcastBatch, groupOf, peerOf, pinLogOf, privateBatch, registeredOrgs, resent, type PinLog } from '../../../support/aggregator-member.js'

/**
 * An author pins the (id, hash) of one of its private batches as a broadcast, on topic `news`, with a payload that
 * never arrives or is refused, while the message that batch carries is decided through another batch. A member holding
 * that batch (X) and one without it (Y) must decide the pin alike: it waits for its payload, holding `news`, and frees
 * it only once that payload is refused.
 */
describe('pass: a broadcast pin of a private batch whose message is decided elsewhere', function () {
  this.timeout(60_000)
  const temp = new TempDirs()
  const [org0, org1, org2] = registeredOrgs(3)
  const group = groupOf([org0!, org1!, org2!])
  let storage: MemoryStorage
  const open: AggregatorMember[] = []
  beforeEach(() => {
    storage = new MemoryStorage()
  })
  afterEach(async () => {
    for (const m of open.splice(0)) await m.close()
  })
  after(() => temp.cleanup())

  async function member(): Promise<AggregatorMember> {
    const m = await AggregatorMember.open(join(await temp.make('parley-pass-own-pin-'), 'db'), storage, org1!, { unpinned: true })
    open.push(m)
    await m.register([org0!, org1!, org2!], [group])
    return m
  }
  const publish = (bytes: string) => storage.upload(new TextEncoder().encode(bytes))
  /** A payload reference that resolves to nothing. */
  const NEVER = `ref-${'0'.repeat(64)}`
  const deliver = async (m: AggregatorMember, ...bs: BatchPayload[]) => {
    for (const b of bs) expect(await m.deliver(peerOf(org0!), b), `batch ${b.id} taken`).to.equal(undefined)
  }
  function stateOf(m: AggregatorMember, bs: BatchPayload[], news: BatchPayload) {
    return {
      pins: bs.flatMap((b) => m.r.pins.ofBatch(b.id).map((p) => ({ batch: p.batchId, index: p.index, masked: p.masked, used: p.dispatched }))),
      message: m.state(bs[0]!.messages[0]!.header.id),
      news: m.state(news.messages[0]!.header.id),
    }
  }
  /** org0's broadcast pin of `b`'s pair on `news` alone, naming `ref`. */
  const rogue = (b: BatchPayload, ref: string): PinLog => ({ ...pinLogOf({ payload: b }), payloadRef: ref, contexts: [broadcastContext('news')] })
  /** org0's batch P (nonce 0), the same message again in a second batch, and org2's broadcast on `news`. */
  async function fixture() {
    const p = privateBatch(org0!, group, [['orders']], [[0]])
    const news = broadcastBatch('org2', org2!.key, [['news']])
    return { p, again: resent(p, (d) => d), news, newsPin: pinLogOf({ payload: news, ref: await publish(serializeBatch(news)) }) }
  }

  it('holds the topic on a holder of the later copy as on a member without it, while its payload never arrives', async () => {
    const { p, again, news, newsPin } = await fixture()
    const [x, y] = [await member(), await member()]
    await deliver(x, p, again)
    await deliver(y, p)
    const pins = [pinLogOf({ payload: p }), rogue(again, NEVER), newsPin]
    for (const m of [x, y]) await m.chain(pins, NEVER)
    const s = stateOf(x, [p, again], news)
    expect([s.message, s.news]).to.deep.equal(['confirmed', 'pending'])
    expect(stateOf(y, [p, again], news)).to.deep.equal(s)
    await deliver(y, again)
    expect(stateOf(y, [p, again], news), 'the copy delivered late changes nothing').to.deep.equal(s)
  })

  it('frees the topic on both once the payload is refused', async () => {
    const { p, again, news, newsPin } = await fixture()
    const [x, y] = [await member(), await member()]
    await deliver(x, p, again)
    await deliver(y, p)
    const pins = [pinLogOf({ payload: p }), rogue(again, await publish('{"not":"a batch"}')), newsPin]
    for (const m of [x, y]) await m.chain(pins)
    const s = stateOf(x, [p, again], news)
    expect([s.message, s.news]).to.deep.equal(['confirmed', 'confirmed'])
    expect(stateOf(y, [p, again], news)).to.deep.equal(s)
  })

  it('holds the topic alike when the batch is unpinned (its message confirmed on arrival on its holder)', async () => {
    const { p, news, newsPin } = await fixture()
    const tx = { type: 'unpinned' as const, id: newId<TxId>() }
    const messages = p.messages.map(({ header, data }) => ({ header: { ...header, txtype: 'none' as const }, data })).map((m) => ({ ...m, hash: messageHash(m.header) }))
    const u: BatchPayload = { ...p, tx, messages, hash: sealManifest({ id: p.id, tx, messages, data: p.data }).hash }
    const [x, y] = [await member(), await member()]
    await deliver(x, u)
    for (const m of [x, y]) await m.chain([rogue(u, NEVER), newsPin], NEVER)
    expect(x.state(u.messages[0]!.header.id)).to.equal('confirmed')
    expect(stateOf(y, [u], news)).to.deep.equal({ ...stateOf(x, [u], news), message: undefined })
    expect(stateOf(y, [u], news).news).to.equal('pending')
  })

  it('holds the topic alike when the broadcast pin came first and the message was decided through another batch', async () => {
    const { p, again, news, newsPin } = await fixture()
    const [x, y] = [await member(), await member()]
    await deliver(x, p, again)
    await deliver(y, again)
    const pins = [rogue(p, NEVER), pinLogOf({ payload: again }), newsPin]
    for (const m of [x, y]) await m.chain(pins, NEVER)
    const s = stateOf(x, [p, again], news)
    expect([s.message, s.news]).to.deep.equal(['confirmed', 'pending'])
    expect(stateOf(y, [p, again], news)).to.deep.equal(s)
  })

  it('holds the topic alike when the copy’s broadcast pin at index 0 precedes its own private pin at index 1', async () => {
    // Two topics: the message's pin range covers both indexes, so settling it through p would reach the broadcast pin.
    const p = privateBatch(org0!, group, [['orders', 'extra']], [[0, 0]])
    const again = resent(p, (d) => d)
    const news = broadcastBatch('org2', org2!.key, [['news']])
    const newsPin = pinLogOf({ payload: news, ref: await publish(serializeBatch(news)) })
    const [x, y] = [await member(), await member()]
    await deliver(x, p, again)
    await deliver(y, p)
    const pins = [pinLogOf({ payload: p }), rogue(again, NEVER), pinLogOf({ payload: again }), newsPin]
    for (const m of [x, y]) await m.chain(pins, NEVER)
    // The copy's private pin is used only where the copy is held: a private pin holds no topic, so only that differs.
    const seen = (m: AggregatorMember) => {
      const s = stateOf(m, [p, again], news)
      return { message: s.message, news: s.news, broadcastPinUsed: s.pins.filter((q) => !q.masked).map((q) => q.used) }
    }
    expect(seen(x)).to.deep.equal({ message: 'confirmed', news: 'pending', broadcastPinUsed: [false] })
    expect(seen(y)).to.deep.equal(seen(x))
  })
})
