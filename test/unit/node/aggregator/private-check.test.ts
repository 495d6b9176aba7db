import { expect } from 'chai'
import { join } from 'node:path'
import type { Hash } from '../../../../node/core/ids.js'
import type { BatchPayload } from '../../../../node/model/index.js'
import { explainWait } from '../../../../node/aggregator/explain.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { MemoryStorage } from '../../../support/storage.js'
import { AggregatorMember, NOSUCH, groupOf, peerOf, pinLogOf, privateBatch, registeredOrgs, resent } from '../../../support/aggregator-member.js'

/**
 * A private pin on chain twice, for two batches of one author: the first pinned decides, on a member that held both
 * batches before the pins and on one that received the first-pinned batch only after both pins were read.
 */
describe('private checks: one pin in two batches of its author', function () {
  this.timeout(60_000)
  const temp = new TempDirs()
  const [org0, org1, org2] = registeredOrgs(3)
  const group = groupOf([org0!, org1!, org2!])
  /** A group of org0 and org1 alone: a member outside it (Y, as if it were org2) never holds its batches. */
  const pair = groupOf([org0!, org1!])
  after(() => temp.cleanup())

  async function member(): Promise<AggregatorMember> {
    const m = await AggregatorMember.open(join(await temp.make('parley-private-check-'), 'db'), new MemoryStorage(), org1!)
    await m.register([org0!, org1!, org2!], [group, pair])
    return m
  }
  const state = (m: AggregatorMember, b: BatchPayload): string => m.r.messages.byRef(b.messages[0]!.header.id, b.messages[0]!.hash)!.state

  /**
   * `first` pinned before `second`; X holds both before the pins, Y receives `first` only after them. `planted`: org2
   * first pins `first`'s (id, hash) with a payload reference that is none, so Y's fetcher records a refusal of it.
   */
  async function verdicts(first: BatchPayload, second: BatchPayload, planted = false): Promise<{ x: string[]; y: string[]; waitedOnY: string; refusedOnY?: string }> {
    const [x, y] = [await member(), await member()]
    try {
      for (const b of [second, first]) await x.deliver(peerOf(org0!), b)
      for (const b of [first, second]) await x.pin(pinLogOf({ payload: b }))
      await y.deliver(peerOf(org0!), second)
      if (planted) {
        await y.pin(pinLogOf({ payload: first }, { signer: org2!.key, payloadRef: 'not-a-reference' }))
        await y.fetch(y.announced.pop()!)
        expect(y.r.batches.byIdHash(first.id, first.hash)?.state, 'the planted pin refused on Y').to.equal('refused')
      }
      for (const b of [first, second]) await y.pin(pinLogOf({ payload: b }))
      const waitedOnY = state(y, second)
      const refusedOnY = await y.deliver(peerOf(org0!), first)
      return { x: [state(x, first), state(x, second)], y: [state(y, first), state(y, second)], waitedOnY, ...(refusedOnY ? { refusedOnY } : {}) }
    } finally {
      await x.close()
      await y.close()
    }
  }

  it('the same message sent again: the batch pinned first decides it, delivered before the pins or after', async () => {
    const plain = privateBatch(org0!, group, [['orders']], [[0]])
    const nosuch = resent(plain, NOSUCH)
    const v = await verdicts(nosuch, plain)
    expect(v.waitedOnY, 'the later pin waits for the first one’s batch').to.equal('pending')
    expect(v.x).to.deep.equal(['rejected', 'rejected'])
    expect(v.y).to.deep.equal(v.x)
  })

  it('two messages at one nonce: the first pinned takes it everywhere, the other is refused', async () => {
    const a = privateBatch(org0!, group, [['orders']], [[0]])
    const b = privateBatch(org0!, group, [['orders']], [[0]])
    const v = await verdicts(b, a)
    expect(v.waitedOnY).to.equal('pending')
    expect(v.x).to.deep.equal(['confirmed', 'rejected'])
    expect(v.y).to.deep.equal(v.x)
  })

  it('another key’s bogus pin of the first batch, refused on one member, neither skips its pin nor turns the batch away', async () => {
    const a = privateBatch(org0!, group, [['orders']], [[0]])
    const b = privateBatch(org0!, group, [['orders']], [[0]])
    const v = await verdicts(b, a, true)
    expect(v.waitedOnY, 'the later pin waits for the real first batch').to.equal('pending')
    expect(v.refusedOnY, 'the real batch is taken').to.equal(undefined)
    expect(v.x).to.deep.equal(['confirmed', 'rejected'])
    expect(v.y).to.deep.equal(v.x)
  })

  it('an author’s private pin naming another key’s batch first holds its nonce alike where that batch is held and where not', async () => {
    const a = privateBatch(org0!, group, [['orders']], [[0]])
    const theirs = privateBatch(org2!, group, [['other']], [[0]])
    const copied = pinLogOf({ payload: a }, { batchId: theirs.id, batchHash: theirs.hash })
    const [x, y] = [await member(), await member()]
    try {
      // Only X holds org2's batch (Y is outside its group, say): the pin names a batch that can never be org0's.
      await x.deliver(peerOf(org2!), theirs)
      for (const m of [x, y]) {
        await m.deliver(peerOf(org0!), a)
        await m.pin(copied)
        await m.pin(pinLogOf({ payload: a }))
      }
      expect(state(x, a)).to.equal('pending')
      expect(state(y, a)).to.equal(state(x, a))
    } finally {
      await x.close()
      await y.close()
    }
  })

  it('an author’s private pin naming its own batch of another group first holds its nonce alike in and outside that group', async () => {
    const a = privateBatch(org0!, group, [['orders']], [[0]])
    const other = privateBatch(org0!, pair, [['x']], [[0]])
    const later = privateBatch(org0!, group, [['orders']], [[1]])
    const elsewhere = privateBatch(org0!, group, [['other']], [[0]])
    // org0 pins a's private contexts naming its own batch for `pair`, then a's own pin and more of its messages.
    const pins = [pinLogOf({ payload: a }, { batchId: other.id, batchHash: other.hash }), ...[a, later, elsewhere].map((b) => pinLogOf({ payload: b }))]
    const [x, y] = [await member(), await member()]
    try {
      // X is in `pair` and holds `other`; Y never does.
      await x.deliver(peerOf(org0!), other)
      for (const m of [x, y]) {
        for (const b of [a, later, elsewhere]) await m.deliver(peerOf(org0!), b)
        for (const p of pins) await m.pin(p)
      }
      const verdicts = (m: AggregatorMember) => [a, later, elsewhere].map((b) => state(m, b))
      expect(verdicts(x), 'a and its successor wait for good, the author’s own doing; its other topic goes on').to.deep.equal(['pending', 'pending', 'confirmed'])
      expect(verdicts(y)).to.deep.equal(verdicts(x))
      // The copied pin at `other`'s index is not its message's pin: X rejects it, which only `pair`'s members can see.
      expect(state(x, other)).to.equal('rejected')
      // X's trace says so, never that the earlier pin, decided there, lets the message be decided at the next walk.
      const message = x.r.messages.byRef(a.messages[0]!.header.id, a.messages[0]!.hash)!
      const batch = x.r.batches.byIdHash(a.id, a.hash)!
      const wait = x.agg.explain(message, batch)!
      const why = explainWait({ ...x.r, explain: (mm, bb) => x.agg.explain(mm, bb) } as Parameters<typeof explainWait>[0], wait.wait, batch)
      expect(why.detail).to.match(/counts as never here on every member, so this message waits for good/)
      expect(why.blockedBy?.batch).to.equal(other.id)
    } finally {
      await x.close()
      await y.close()
    }
  })

  it('a first batch rejected by its pins, decided in the pass that walks the later pin again, takes the nonce there', async () => {
    // Its second topic's pin on chain is not its own: rejected by the masked check, so its sequences do not move on.
    const first = privateBatch(org0!, group, [['orders', 'other']], [[0, 0]])
    const second = privateBatch(org0!, group, [['orders']], [[0]])
    const [x, y] = [await member(), await member()]
    try {
      const pins = [pinLogOf({ payload: first }, { contexts: [pinLogOf({ payload: first }).contexts[0]!, 'ab'.repeat(32) as Hash] }), pinLogOf({ payload: second })]
      for (const b of [second, first]) await x.deliver(peerOf(org0!), b)
      for (const p of pins) await x.pin(p)
      await y.deliver(peerOf(org0!), second)
      for (const p of pins) await y.pin(p)
      expect(state(y, second), 'the later pin waits for the first one’s batch').to.equal('pending')
      await y.deliver(peerOf(org0!), first)
      expect([state(x, first), state(x, second)]).to.deep.equal(['rejected', 'rejected'])
      expect([state(y, first), state(y, second)]).to.deep.equal([state(x, first), state(x, second)])
    } finally {
      await x.close()
      await y.close()
    }
  })
})
