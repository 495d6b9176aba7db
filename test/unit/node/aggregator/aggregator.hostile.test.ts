import { expect } from 'chai'
import { join } from 'node:path'
import { serializeBatch } from '../../../../node/batch/payload.js'
import { broadcastContext, parsePin } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type Hash, type TxId } from '../../../../node/core/ids.js'
import { privateContext } from '../../../../node/core/hashes.js'
import type { BatchPayload, PinnedBatch } from '../../../../node/model/index.js'
import { explainWait } from '../../../../node/aggregator/explain.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { waitUntil } from '../../../support/wait.js'
import { MemoryStorage } from '../../../support/storage.js'
import { AggregatorMember, broadcastBatch, carryingData, claimBatch, groupOf, peerOf, pinLogOf, privateBatch, registeredOrgs, type PinLog, type SealedBatch } from '../../../support/aggregator-member.js'

const STRANGER = '0x' + '5e'.repeat(20)
const NEWCOMER = '0x' + 'ce'.repeat(20)
const randomHash = (): Hash => (newId().replace(/-/g, '') + newId().replace(/-/g, '')) as Hash

/**
 * What a member, or any chain account, can do to a member's ordering with pins and batches, over one member's real
 * database, fetcher, private receiver and aggregator: nobody outside the rules blocks a topic, and a squatter's pin
 * or batch never decides for the honest one.
 */
describe('aggregator: hostile pins and batches', function () {
  const temp = new TempDirs()
  const [org0, org1, org2] = registeredOrgs(3)
  const group = groupOf([org0!, org1!, org2!])
  let storage: MemoryStorage
  let m: AggregatorMember

  beforeEach(async () => {
    storage = new MemoryStorage()
    m = await AggregatorMember.open(join(await temp.make('parley-hostile-'), 'db'), storage, { org: 'org1', node: 'node1', key: org1!.key })
    await m.register([org0!, org1!, org2!], [group])
  })
  afterEach(() => m.close())
  after(() => temp.cleanup())

  async function publish(payload: BatchPayload): Promise<SealedBatch> {
    return { payload, ref: await storage.upload(new TextEncoder().encode(serializeBatch(payload))) }
  }
  /** Pins it, and hands back what the pin announced to the fetcher. */
  async function pinned(log: PinLog): Promise<PinnedBatch | undefined> {
    const before = m.announced.length
    await m.pin(log)
    return m.announced[before]
  }
  async function pinAndFetch(b: SealedBatch, over: Partial<PinLog> = {}): Promise<void> {
    const p = await pinned(pinLogOf(b, over))
    if (p) await m.fetch(p)
  }
  const idOf = (b: SealedBatch, i = 0) => b.payload.messages[i]!.header.id
  /** A pin of a batch whose payload never comes: a reference that resolves to nothing. */
  const garbage = (signer: string, topics: string[]): PinLog => ({ signer, batchId: newId<BatchId>(), batchHash: randomHash(), txId: newId<TxId>(), payloadRef: `ref-${'0'.repeat(64)}`, contexts: topics.map((t) => broadcastContext(t)) })

  it('lets an unregistered account’s one pin on a topic block nothing', async () => {
    await m.pin(garbage(STRANGER, ['orders']))
    const honest = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    await pinAndFetch(honest)
    expect(m.confirmed()).to.deep.equal([idOf(honest)])
  })

  it('holds a newcomer’s later pin while its claim is undecided, then orders it as a member’s once the claim confirms', async () => {
    const claim = await publish(claimBatch('newcomer', NEWCOMER))
    const claimPin = await pinned(pinLogOf(claim))
    const own = await publish(broadcastBatch('newcomer', NEWCOMER, [['orders']]))
    await pinAndFetch(own)
    const after = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    await pinAndFetch(after)
    expect(m.confirmed(), 'the claim is not here: the newcomer’s pin may be a member’s').to.deep.equal([])
    await m.fetch(claimPin!)
    expect(m.confirmed()).to.deep.equal([idOf(own), idOf(after)])
  })

  it('says why a message waits behind a newcomer’s pin: its key is no member’s, and an earlier pin of its is undecided', async () => {
    await m.pin(pinLogOf({ payload: claimBatch('newcomer', NEWCOMER), ref: 'ref-' + '1'.repeat(64) }))
    await m.pin(garbage(NEWCOMER, ['orders']))
    const after = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    await pinAndFetch(after)
    const message = m.r.messages.get(idOf(after))!
    const wait = m.agg.explain(message, m.r.batches.byIdHash(after.payload.id, after.payload.hash)!)!.wait
    const why = explainWait({ ...m.r, explain: (x, b) => m.agg.explain(x, b) }, wait)
    expect(why.reason).to.equal('blocked')
    expect(why.detail).to.contain(`${NEWCOMER} is no member's key here, and holds the topic while an earlier pin it signed`)
  })

  it('frees the topics of a newcomer’s later pins once its claim is refused, and rejects its message', async () => {
    const junk = await storage.upload(new TextEncoder().encode('{"not":"a batch"}'))
    const claimPin = await pinned(pinLogOf({ payload: claimBatch('newcomer', NEWCOMER), ref: junk }))
    const own = await publish(broadcastBatch('newcomer', NEWCOMER, [['orders']]))
    await pinAndFetch(own)
    const after = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    await pinAndFetch(after)
    expect(m.confirmed()).to.deep.equal([])
    await m.fetch(claimPin!)
    expect(m.confirmed()).to.deep.equal([idOf(after)])
    expect(m.r.messages.get(idOf(own))!.rejectReason).to.contain('no registered identity')
  })

  it('frees the topics of a member’s pin whose payload is refused, whatever the reason', async () => {
    const junk = await storage.upload(new TextEncoder().encode('{"not":"a batch"}'))
    const tampered = await publish(broadcastBatch('org2', org2!.key, [['orders']]))
    await pinAndFetch({ payload: broadcastBatch('org2', org2!.key, [['orders']]), ref: junk })
    await pinAndFetch(tampered, { batchHash: randomHash() })
    await pinAndFetch(tampered, { payloadRef: 'not-a-reference' })
    const after = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    await pinAndFetch(after)
    expect(m.confirmed()).to.deep.equal([idOf(after)])
    expect(m.r.pins.undispatchedAfter(0, 100)).to.deep.equal([])
  })

  it('refuses every pin event naming a payload that fails, also those that came while it was being fetched', async () => {
    const junk = await storage.upload(new TextEncoder().encode('{"not":"a batch"}'))
    const payload = broadcastBatch('org2', org2!.key, [['orders']])
    const first = await pinned(pinLogOf({ payload, ref: junk }))
    const second = await pinned(pinLogOf({ payload, ref: junk }, { signer: org0!.key }))
    m.fetcher.fetch(first!)
    m.fetcher.fetch(second!)
    await waitUntil('both events refused', async () => {
      await m.settle()
      return m.r.pins.undispatchedAfter(0, 100).length === 0
    }, { timeoutMs: 10_000, intervalMs: 20 })
    const after = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    await pinAndFetch(after)
    expect(m.confirmed()).to.deep.equal([idOf(after)])
  })

  it('keeps a member’s pin whose payload has not arrived holding its topic', async () => {
    const late = await publish(broadcastBatch('org2', org2!.key, [['orders']]))
    const latePin = await pinned(pinLogOf(late))
    const after = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    await pinAndFetch(after)
    expect(m.confirmed()).to.deep.equal([])
    await m.fetch(latePin!)
    expect(m.confirmed()).to.deep.equal([idOf(late), idOf(after)])
  })

  it('lets squatters’ pins of a broadcast’s id (wrong hash, garbage contexts, bad reference) decide nothing: the honest pin confirms it', async () => {
    const honest = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    await pinAndFetch(honest, { signer: org2!.key, batchHash: randomHash() })
    await pinAndFetch(honest, { signer: org2!.key, contexts: [broadcastContext('garbage')] })
    await pinAndFetch(honest, { signer: org2!.key, payloadRef: await storage.upload(new TextEncoder().encode('garbage')) })
    expect(m.state(idOf(honest)), 'only its own key’s pin decides it').to.equal('pending')
    await pinAndFetch(honest)
    const next = await publish(broadcastBatch('org0', org0!.key, [['orders'], ['garbage']]))
    await pinAndFetch(next)
    expect(m.confirmed()).to.deep.equal([idOf(honest), idOf(next, 0), idOf(next, 1)])
    expect(m.r.pins.undispatchedAfter(0, 100), 'every squatter pin is used').to.deep.equal([])
  })

  it('lets a squatter’s pins of a private batch’s id neither reject its message nor freeze its author’s nonce', async () => {
    const first = privateBatch(org0!, group, [['deal']], [[0]])
    const second = privateBatch(org0!, group, [['deal']], [[1]])
    expect(await m.deliver(peerOf(org0!), first)).to.equal(undefined)
    expect(await m.deliver(peerOf(org0!), second)).to.equal(undefined)
    const own = pinLogOf({ payload: first })
    // A group member learnt the id from the delivery and pinned it first: other hash, garbage contexts, its own key.
    await m.pin({ ...own, signer: org2!.key, batchHash: randomHash() })
    await m.pin({ ...own, signer: org2!.key, contexts: [randomHash()] })
    expect(m.state(first.messages[0]!.header.id)).to.equal('pending')
    await m.pin(own)
    await m.pin(pinLogOf({ payload: second }))
    expect(m.state(first.messages[0]!.header.id)).to.equal('confirmed')
    expect(m.state(second.messages[0]!.header.id), 'the author’s next nonce moved on').to.equal('confirmed')
    const context = privateContext('deal', group.hash)
    expect(m.r.nextpins.next(context, first.author)).to.equal(2)
    expect(parsePin(second.messages[0]!.pins![0]!).nonce).to.equal(1)
  })

  it('keeps a private batch delivered under a broadcast’s id apart: the broadcast is still fetched and confirmed', async () => {
    const broadcast = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    const announced = await pinned(pinLogOf(broadcast))
    const takeover = privateBatch(org0!, group, [['orders']], [[0]], { id: broadcast.payload.id })
    expect(await m.deliver(peerOf(org0!), takeover)).to.equal(undefined)
    expect(m.r.batches.byIdHash(takeover.id, takeover.hash)?.type).to.equal('private')
    await m.fetch(announced!)
    expect(m.r.batches.byIdHash(broadcast.payload.id, broadcast.payload.hash)?.type).to.equal('broadcast')
    expect(m.confirmed()).to.deep.equal([idOf(broadcast)])
    expect(m.state(takeover.messages[0]!.header.id), 'not pinned').to.equal('pending')
  })

  it('decides a message by the data its own batch carried: a copy of its data item with another datatype, held first, decides only its own', async () => {
    const honest = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    const item = honest.payload.data[0]!
    // org2 learnt the item (its id and value) and delivers, before the honest batch is fetched here, a message of its
    // own carrying a copy under the same id and value (the same hash) with a datatype nobody defined.
    const copy = carryingData(privateBatch(org2!, group, [['elsewhere']], [[0]]), { ...item, datatype: { name: 'nosuch', version: '1' } })
    expect(copy.data[0]!.hash).to.equal(item.hash)
    expect(await m.deliver(peerOf(org2!), copy)).to.equal(undefined)
    await pinAndFetch(honest)
    await m.pin(pinLogOf({ payload: copy }))
    const row = (b: BatchPayload) => m.r.messages.byRef(b.messages[0]!.header.id, b.messages[0]!.hash)!
    expect(row(honest.payload).state, row(honest.payload).rejectReason).to.equal('confirmed')
    expect(row(copy).state).to.equal('rejected')
    expect(row(copy).rejectReason).to.contain('nosuch')
    // Each reads the item as its own batch carried it.
    expect(m.r.data.getMany(row(honest.payload).data).map((d) => d.datatype)).to.deep.equal([undefined])
    expect(m.r.data.getMany(row(copy).data).map((d) => d.datatype)).to.deep.equal([{ name: 'nosuch', version: '1' }])
  })

  it('decides a message reusing an id with other content on its own: it waits for nothing of the other, and both are confirmed', async () => {
    // A broadcast on `orders` holds the honest message back (its payload comes last), so the honest one waits.
    const blocker = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    const blockerPin = await pinned(pinLogOf(blocker))
    const honest = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    await pinAndFetch(honest)
    // org2 pins later, on another topic, a message of its own under the honest id: its own pins and checks decide it.
    const reuse = await publish(broadcastBatch('org2', org2!.key, [['elsewhere']], { header: { id: idOf(honest) } }))
    await pinAndFetch(reuse)
    const own = (b: SealedBatch) => m.r.messages.byRef(idOf(b), b.payload.messages[0]!.hash)!
    expect([own(honest).state, own(reuse).state], 'the later one waits for nothing of the earlier').to.deep.equal(['pending', 'confirmed'])
    expect(m.r.messages.get(idOf(honest))!.hash, 'the id alone: the confirmed one').to.equal(reuse.payload.messages[0]!.hash)
    await m.fetch(blockerPin!)
    expect(m.confirmed()).to.deep.equal([idOf(reuse), idOf(blocker), idOf(honest)])
    expect([own(honest).state, own(reuse).state]).to.deep.equal(['confirmed', 'confirmed'])
    expect(m.r.messages.get(idOf(honest))!.hash, 'of two confirmed, the one pinned first').to.equal(honest.payload.messages[0]!.hash)
    const verdicts = m.r.events.list({ namespace: 'default', reference: idOf(honest), limit: 10, skip: 0, ascending: true })
    expect(verdicts.map((e) => [e.type, e.referenceHash])).to.deep.equal([
      ['message_confirmed', reuse.payload.messages[0]!.hash],
      ['message_confirmed', honest.payload.messages[0]!.hash],
    ])
  })
})
