import { expect } from 'chai'
import { join } from 'node:path'
import { serializeBatch } from '../../../../node/batch/payload.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { broadcastContext, dataHash, dataRefsHash, identityTopic, messageHash } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type IdentityId, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { claimValue } from '../../../../node/definitions/identity-claim.js'
import { StandingQueues } from '../../../../node/aggregator/standing.js'
import { orgDid, SYSTEM_NAMESPACE, TAG_IDENTITY_CLAIM, type BatchPayload, type Data, type Header, type PinnedBatch } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { MemoryStorage } from '../../../support/storage.js'
import { AggregatorMember, broadcastBatch, claimBatch, groupOf, peerOf, pinLogOf, privateBatch, registeredOrgs, type PinLog, type SealedBatch } from '../../../support/aggregator-member.js'

const NEWCOMER = '0x' + 'ce'.repeat(20)
const S = NEWCOMER
const randomHash = (): Hash => (newId().replace(/-/g, '') + newId().replace(/-/g, '')) as Hash

/**
 * A key counts as a member's from the end of its claim's BatchPin event on, in the chain's order: the same on every
 * member whichever payload arrives first, and the same live and after a restart (the standing rebuilt from the
 * database). Found by a review that ran members through the orders below.
 */
describe('aggregator: registration is placed in the chain\'s order', function () {
  const temp = new TempDirs()
  const [org0, org1, org2] = registeredOrgs(3)
  const group = groupOf([org0!, org1!])
  let storage: MemoryStorage
  after(() => temp.cleanup())

  async function member(self: typeof org0): Promise<AggregatorMember> {
    const m = await AggregatorMember.open(join(await temp.make('reg-order-'), 'db'), storage, { org: self!.org, node: self!.node, key: self!.key })
    await m.register([org0!, org1!, org2!], [group])
    return m
  }
  async function publish(payload: BatchPayload): Promise<SealedBatch> {
    return { payload, ref: await storage.upload(new TextEncoder().encode(serializeBatch(payload))) }
  }
  async function pinned(m: AggregatorMember, log: PinLog): Promise<PinnedBatch | undefined> {
    const before = m.announced.length
    await m.pin(log)
    return m.announced[before]
  }

  it('pins of the claim\'s own event after the claim: the same standing live and after a reset', () => {
    const q = new StandingQueues(() => undefined)
    q.add({ seq: 1, hash: 'c' as Hash, signer: NEWCOMER, eventId: 'E' })
    q.add({ seq: 2, hash: 'orders' as Hash, signer: NEWCOMER, eventId: 'E' })
    q.leave({ seq: 1, hash: 'c' as Hash, signer: NEWCOMER, eventId: 'E' })
    // Registered after its claim's event, whose last pin is 2.
    q.registered(NEWCOMER, 2)
    const r = new StandingQueues(() => 2)
    r.reset([{ seq: 2, hash: 'orders' as Hash, signer: NEWCOMER, eventId: 'E' }])
    expect(q.standingOf(2)).to.equal(r.standingOf(2)).and.to.equal('stranger')
  })

  it('a message pinned before its own key\'s claim: rejected on every member, whichever payload arrives first', async () => {
    storage = new MemoryStorage()
    const a = await member(org0)
    const b = await member(org1)
    const own = await publish(broadcastBatch('newcomer', NEWCOMER, [['orders']]))
    const claim = await publish(claimBatch('newcomer', NEWCOMER))
    const aOwn = await pinned(a, pinLogOf(own)); const aClaim = await pinned(a, pinLogOf(claim))
    const bOwn = await pinned(b, pinLogOf(own)); const bClaim = await pinned(b, pinLogOf(claim))
    await a.fetch(aOwn!); await a.fetch(aClaim!)   // A: own payload first
    await b.fetch(bClaim!); await b.fetch(bOwn!)   // B: claim payload first
    const id = own.payload.messages[0]!.header.id
    const sa = a.state(id), sb = b.state(id)
    await a.close(); await b.close()
    expect(sa, 'member A').to.equal(sb)
    expect(sa).to.equal('rejected')
  })

  it('an unmasked pin naming a private batch (id, hash): the same on members inside and outside the group', async () => {
    storage = new MemoryStorage()
    const inGroup = await member(org1)
    const outside = await member(org2)
    const priv = privateBatch(org0!, group, [['deal']], [[0]])
    expect(await inGroup.deliver(peerOf(org0!), priv)).to.equal(undefined)
    // org0 itself (or any member who read the masked pin's id/hash on chain) pins it unmasked, on "orders", ref to nothing
    const squat: PinLog = { signer: org2!.key, batchId: priv.id, batchHash: priv.hash, txId: priv.tx.id, payloadRef: `ref-${'0'.repeat(64)}`, contexts: [broadcastContext('orders')] }
    await inGroup.pin(squat); await outside.pin(squat)
    const next = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    const p1 = await pinned(inGroup, pinLogOf(next)); const p2 = await pinned(outside, pinLogOf(next))
    await inGroup.fetch(p1!); await outside.fetch(p2!)
    const id = next.payload.messages[0]!.header.id
    const s1 = inGroup.state(id), s2 = outside.state(id)
    await inGroup.close(); await outside.close()
    expect(s1, 'group member').to.equal(s2)
  })

  it('a claim and a waiting message in one batch: a later message on its topic, the same live and after a restart', async () => {
    const storage = new MemoryStorage()
    const publish = async (payload: BatchPayload): Promise<SealedBatch> => ({ payload, ref: await storage.upload(new TextEncoder().encode(serializeBatch(payload))) })
    const did = orgDid('newcomer')
    const cv = claimValue({ id: newId<IdentityId>(), did, type: 'org', name: 'newcomer' })
    const d0: Data = { id: newId<DataId>(), validator: 'json', namespace: SYSTEM_NAMESPACE, hash: dataHash({ valueRaw: cv }), created: now(), value: cv }
    const blobHash = ('ab'.repeat(32)) as Hash
    const d1: Data = { id: newId<DataId>(), validator: 'json', namespace: SYSTEM_NAMESPACE, hash: dataHash({ blobHash }), created: now(), value: null, blob: { hash: blobHash, size: 10, public: 'ref-' + 'b'.repeat(64) } as never }
    const h0: Header = { id: newId<MessageId>(), type: 'definition', tag: TAG_IDENTITY_CLAIM, txtype: 'batch_pin', author: did, key: S, created: now(), namespace: SYSTEM_NAMESPACE, topics: [identityTopic(did)], datahash: dataRefsHash([{ id: d0.id, hash: d0.hash }]) }
    const h1: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: did, key: S, created: now(), namespace: SYSTEM_NAMESPACE, topics: ['orders'], datahash: dataRefsHash([{ id: d1.id, hash: d1.hash }]) }
    const messages = [h0, h1].map((h, i) => ({ header: h, hash: messageHash(h), data: [{ id: [d0, d1][i]!.id, hash: [d0, d1][i]!.hash }] }))
    const id = newId<BatchId>(); const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
    const { hash } = sealManifest({ id, tx, messages, data: [d0, d1] })
    const claim = await publish({ id, type: 'broadcast', namespace: SYSTEM_NAMESPACE, author: did, key: S, created: now(), hash, tx, messages, data: [d0, d1] })
    const next = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    const results: string[] = []
    for (const restart of [false, true]) {
      const m = await AggregatorMember.open(join(await temp.make('reg-order-'), 'db'), storage, { org: 'org1', node: 'node1', key: org1!.key })
      await m.register([org0!, org1!])
      const pinned = async (log: PinLog): Promise<PinnedBatch | undefined> => { const n = m.announced.length; await m.pin(log); return m.announced[n] }
      const p = await pinned(pinLogOf(claim)); await m.fetch(p!)
      expect(m.r.identities.byDid(did), 'claim confirmed').to.not.equal(undefined)
      if (restart) m.agg.recheckWaiting()
      const q = await pinned(pinLogOf(next)); await m.fetch(q!)
      results.push(`${m.state(h1.id)}/${m.state(next.payload.messages[0]!.header.id)}`)
      await m.close()
    }
    expect(results[1], 'after restart').to.equal(results[0])
  })

  it('where a key was registered, read from the database after a restart, is where it was live', async () => {
    const storage = new MemoryStorage()
    const publish = async (payload: BatchPayload): Promise<SealedBatch> => ({ payload, ref: await storage.upload(new TextEncoder().encode(serializeBatch(payload))) })
    const junk = await storage.upload(new TextEncoder().encode('{"not":"a batch"}'))
    const claimId = newId<BatchId>()
    const value = claimValue({ id: newId<IdentityId>(), did: orgDid('newcomer'), type: 'org', name: 'newcomer' })
    const claim = await publish(broadcastBatch('newcomer', S, [[identityTopic(orgDid('newcomer'))]], { namespace: SYSTEM_NAMESPACE, header: { type: 'definition', tag: TAG_IDENTITY_CLAIM }, value: () => value, id: claimId }))
    const next = await publish(broadcastBatch('org0', org0!.key, [['orders']]))
    const results: string[] = []
    for (const restart of [false, true]) {
      const m = await AggregatorMember.open(join(await temp.make('reg-order-'), 'db'), storage, { org: 'org1', node: 'node1', key: org1!.key })
      await m.register([org0!, org1!])
      const pinned = async (log: PinLog): Promise<PinnedBatch | undefined> => { const n = m.announced.length; await m.pin(log); return m.announced[n] }
      // 1. S pins the claim's batch id first with another hash and a junk payload: refused, freed.
      const p1 = await pinned({ signer: S, batchId: claimId, batchHash: randomHash(), txId: newId<TxId>(), payloadRef: junk, contexts: [randomHash()] })
      await m.fetch(p1!)
      // 2. S pins garbage on "orders" whose payload never comes: a stranger's pin (nothing of S waits before it).
      await m.pin({ signer: S, batchId: newId<BatchId>(), batchHash: randomHash(), txId: newId<TxId>(), payloadRef: `ref-${'0'.repeat(64)}`, contexts: [broadcastContext('orders')] })
      // 3. S's claim: confirmed, S is a member from here on.
      const p3 = await pinned(pinLogOf(claim)); await m.fetch(p3!)
      if (restart) m.agg.recheckWaiting() // same reset as start()
      // 4. org0 on "orders".
      const p4 = await pinned(pinLogOf(next)); await m.fetch(p4!)
      results.push(m.state(next.payload.messages[0]!.header.id)!)
      await m.close()
    }
    expect(results[1], 'after a restart').to.equal(results[0])
  })
})
