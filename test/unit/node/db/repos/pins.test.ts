import { join } from 'node:path'
import { expect } from 'chai'
import { newId, type BatchId, type Hash, type TxId } from '../../../../../node/core/ids.js'
import { now } from '../../../../../node/core/time.js'
import type { BatchState } from '../../../../../node/model/index.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { forEachEngine, openRepos, type Repos } from '../../../../support/repos.js'

/**
 * A pin is `held` when its batch is stored here and not refused, whichever comes first: the pin's INSERT writes it
 * for a batch already here (schema v11), the batch's INSERT marks the pins already here (v7's trigger). Only held
 * pins are walked by a rewind, so a wrong flag would leave a message waiting for good, or walk pins that can only wait.
 */
forEachEngine('db: which pins are held', function (engine) {
  const temp = new TempDirs()
  after(() => temp.cleanup())

  const hash = (c: string) => c.repeat(64) as Hash
  /** The group of the private messages the firstPrivate reads check. */
  const G = hash('9')
  /** A broadcast batch, or a private one of `group` when given. */
  async function batch(r: Repos, id: BatchId, state: BatchState, key = '0xabc', group?: Hash): Promise<void> {
    const kind = group === undefined ? { type: 'broadcast' as const, payloadRef: 'QmX' } : { type: 'private' as const, group }
    await r.db.transaction((tx) =>
      r.batches.insert(tx, { id, ...kind, namespace: 'default', author: 'did:firefly:org/org0', key, created: now(), hash: hash('a'), manifest: '{}', txId: newId<TxId>(), state, local: false }),
    )
  }
  async function pins(r: Repos, id: BatchId, n: number): Promise<void> {
    await r.db.transaction((tx) =>
      r.pins.insertMany(
        tx,
        Array.from({ length: n }, (_, index) => ({ batchId: id, batchHash: hash('a'), index, hash: hash('b'), masked: false, signer: '0xabc', eventId: newId() })),
      ),
    )
  }
  const heldOf = (r: Repos): Map<string, number> => {
    const out = new Map<string, number>()
    for (const p of r.pins.heldWaitingBetween(0, Number.MAX_SAFE_INTEGER, 1000)) out.set(p.batchId, (out.get(p.batchId) ?? 0) + 1)
    return out
  }

  it('marks pins inserted after their batch, and those inserted before it once it comes; never those of a refused batch; the same after replay', async function () {
    const dir = join(await temp.make('parley-pins-held-'), 'db')
    let r = await openRepos(dir, engine)
    const [stored, later, refused, absent] = [newId<BatchId>(), newId<BatchId>(), newId<BatchId>(), newId<BatchId>()]
    await batch(r, stored, 'received')
    await pins(r, stored, 3)
    await pins(r, later, 2)
    await batch(r, refused, 'refused')
    await pins(r, refused, 2)
    await pins(r, absent, 1)
    expect(heldOf(r)).to.deep.equal(new Map([[stored, 3]]))
    await batch(r, later, 'received')
    const expected = new Map([
      [stored, 3],
      [later, 2],
    ])
    expect(heldOf(r)).to.deep.equal(expected)
    // Dispatched pins leave the waiting indexes.
    await r.db.transaction((tx) => r.pins.markDispatched(tx, later, 0, 0))
    expect(heldOf(r)).to.deep.equal(new Map([[stored, 3], [later, 1]]))
    expect(r.pins.waiting().length, 'waiting: 3 + 1 + 2 + 1').to.equal(7)
    // The journal replays to the same flags (the insert's value is journaled; the trigger runs again).
    await r.db.close()
    r = await openRepos(dir, engine)
    expect(heldOf(r)).to.deep.equal(new Map([[stored, 3], [later, 1]]))
    expect(r.pins.waiting().length).to.equal(7)
    await r.db.close()
  })
  it('answers the first private pin of a hash by its signer, passing over other signers and broadcast pins', async function () {
    const r = await openRepos(join(await temp.make('parley-pins-first-'), 'db'), engine)
    try {
      const [squat, broadcast, absent, stored] = [newId<BatchId>(), newId<BatchId>(), newId<BatchId>(), newId<BatchId>()]
      await batch(r, stored, 'received', '0xabc', G)
      const pin = (batchId: BatchId, signer: string, masked = true) => ({ batchId, batchHash: hash('a'), index: 0, hash: hash('c'), masked, signer, eventId: newId() })
      // The signer's own broadcast pin of the hash (one naming a payload reference) decides no private message.
      await r.db.transaction((tx) => r.pins.insertMany(tx, [pin(squat, '0xdef'), pin(broadcast, '0xabc', false), pin(absent, '0xabc'), pin(stored, '0xabc')]))
      const first = r.pins.firstPrivate(hash('c'), '0xabc', G)!
      expect([first.pin.batchId, first.held]).to.deep.equal([absent, false])
      await batch(r, absent, 'refused')
      expect(r.pins.firstPrivate(hash('c'), '0xabc', G)!.held, 'a refusal of its pair stands for no private batch').to.equal(false)
      expect(r.pins.firstPrivate(hash('c'), '0xabc', G)!.pin.batchId).to.equal(absent)
      await r.db.transaction((tx) => r.batches.dropRefused(tx, absent, hash('a')))
      await batch(r, absent, 'received', '0xabc', G)
      expect(r.pins.firstPrivate(hash('c'), '0xabc', G)!.held, 'its batch come').to.equal(true)
      expect(r.pins.firstPrivate(hash('d'), '0xabc', G)).to.equal(undefined)
    } finally {
      await r.db.close()
    }
  })
  it('writes a private pin repeated when its signer pinned its hash before, in an earlier event or the same one; the same after replay', async function () {
    const dir = join(await temp.make('parley-pins-repeated-'), 'db')
    let r = await openRepos(dir, engine)
    const pin = (batchId: BatchId, pinHash: Hash, masked: boolean, signer = '0xabc', index = 0) => ({ batchId, batchHash: hash('a'), index, hash: pinHash, masked, signer, eventId: newId() })
    const [first, other, again, same, broadcast] = [newId<BatchId>(), newId<BatchId>(), newId<BatchId>(), newId<BatchId>(), newId<BatchId>()]
    await r.db.transaction((tx) => r.pins.insertMany(tx, [pin(first, hash('c'), true), pin(other, hash('c'), true, '0xdef'), pin(broadcast, hash('d'), false), pin(broadcast, hash('d'), false, '0xabc', 1)]))
    await r.db.transaction((tx) => r.pins.insertMany(tx, [pin(again, hash('c'), true), pin(same, hash('e'), true), pin(same, hash('e'), true, '0xabc', 1)]))
    const repeated = (): string[] => r.pins.waiting().flatMap((w) => r.pins.bySeq(w.seq)!).filter((p) => p.repeated).map((p) => `${p.batchId === again ? 'again' : p.batchId === same ? 'same' : 'other'}/${p.index}`)
    expect(repeated()).to.deep.equal(['again/0', 'same/1'])
    await r.db.close()
    r = await openRepos(dir, engine)
    expect(repeated()).to.deep.equal(['again/0', 'same/1'])
    await r.db.close()
  })
  it('counts only broadcast pins as earlier pins waiting for a context or a signer', async function () {
    const r = await openRepos(join(await temp.make('parley-pins-earlier-'), 'db'), engine)
    try {
      const [masked, broadcast] = [newId<BatchId>(), newId<BatchId>()]
      const pin = (batchId: BatchId, isMasked: boolean) => ({ batchId, batchHash: hash('a'), index: 0, hash: hash('c'), masked: isMasked, signer: '0xabc', eventId: newId() })
      await r.db.transaction((tx) => r.pins.insertMany(tx, [pin(masked, true), pin(broadcast, false)]))
      const [first, second] = r.pins.waiting().map((p) => p.seq)
      // Only the private pin precedes `second`: only its group's members would ever use it.
      const read = (seq: number) => r.db.transaction((tx) => [r.pins.earlierUndispatched(tx, hash('c'), seq), r.pins.earlierUndispatchedBySigner(tx, '0xabc', seq)])
      expect(await read(second!)).to.deep.equal([false, false])
      expect(await read(second! + 1)).to.deep.equal([true, true])
      expect(first).to.be.below(second!)
    } finally {
      await r.db.close()
    }
  })
  it('holds only batches of the signer’s own key: one held under another counts, never held', async function () {
    const r = await openRepos(join(await temp.make('parley-pins-first-'), 'db'), engine)
    try {
      const [others, planted, own] = [newId<BatchId>(), newId<BatchId>(), newId<BatchId>()]
      await batch(r, others, 'received', '0xdef', G)
      // Another key pinned (planted, its hash) with a bogus payload: the fetcher recorded that pin's refusal.
      await batch(r, planted, 'refused', '0xdef')
      await batch(r, own, 'received', '0xabc', G)
      const pin = (batchId: BatchId) => ({ batchId, batchHash: hash('a'), index: 0, hash: hash('c'), masked: true, signer: '0xabc', eventId: newId() })
      await r.db.transaction((tx) => r.pins.insertMany(tx, [pin(others), pin(planted), pin(own)]))
      const first = r.pins.firstPrivate(hash('c'), '0xabc', G)!
      expect([first.pin.batchId, first.held], 'as on a member that does not hold the other key’s batch').to.deep.equal([others, false])
    } finally {
      await r.db.close()
    }
  })
  it('holds only a batch of the checked message’s group: one of the signer’s for another group counts, never held', async function () {
    const r = await openRepos(join(await temp.make('parley-pins-first-'), 'db'), engine)
    try {
      const [copied, broadcast, own] = [newId<BatchId>(), newId<BatchId>(), newId<BatchId>()]
      // The signer pinned this context's hash naming its own batch of another group, then a broadcast batch of its own.
      await batch(r, copied, 'received', '0xabc', hash('8'))
      await batch(r, broadcast, 'received')
      await batch(r, own, 'received', '0xabc', G)
      const pin = (batchId: BatchId) => ({ batchId, batchHash: hash('a'), index: 0, hash: hash('c'), masked: true, signer: '0xabc', eventId: newId() })
      await r.db.transaction((tx) => r.pins.insertMany(tx, [pin(copied), pin(broadcast), pin(own)]))
      const first = r.pins.firstPrivate(hash('c'), '0xabc', G)!
      expect([first.pin.batchId, first.held], 'as on a member outside the other group').to.deep.equal([copied, false])
      expect(r.pins.firstPrivate(hash('c'), '0xabc', hash('8'))!.held, 'for a message of that group').to.equal(true)
    } finally {
      await r.db.close()
    }
  })
})
