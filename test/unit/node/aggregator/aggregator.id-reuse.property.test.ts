import { expect } from 'chai'
import fc from 'fast-check'
import { join } from 'node:path'
import { sealManifest } from '../../../../node/batch/verify.js'
import { messageHash } from '../../../../node/core/hashes.js'
import type { MessageId } from '../../../../node/core/ids.js'
import type { BatchPayload, Data } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { MemoryStorage } from '../../../support/storage.js'
import { seededRandom as random } from '../../../support/seeded-random.js'
import { AggregatorMember, carryingData, groupOf, peerOf, pinLogOf, privateBatch, registeredOrgs, resent } from '../../../support/aggregator-member.js'

interface Plan {
  /** Honest private batches: author (org0 or org1). */
  honest: (0 | 1)[]
  /**
   * Batches of org2 (a member gone bad) reusing the id of an honest message with other content, or (`carried`) the id
   * and value of its data item with other carried fields; a sort key places each pin.
   */
  reuses: { target: number; at: number; carried: Carried | undefined }[]
  /**
   * An honest message sent again by its author in a batch of its own (the same id and hash) carrying its data item
   * with other fields; a sort key places its pin: the first of the message's pins on chain decides it.
   */
  resends: { target: number; at: number; carried: Carried }[]
  /** Per member, the seed of the order the batches are delivered in. */
  arrivals: number[]
}

/**
 * What a copy of a data item changes of the fields its hash does not cover, and the verdict its own message gets for
 * it (no datatype `nosuch/1` is defined; `none` checks nothing).
 */
type Carried = 'datatype' | 'validator' | 'created'
const CARRIED: Record<Carried, { change: (d: Data) => Data; verdict: 'confirmed' | 'rejected' }> = {
  datatype: { change: (d) => ({ ...d, datatype: { name: 'nosuch', version: '1' } }), verdict: 'rejected' },
  validator: { change: (d) => ({ ...d, validator: 'none' }), verdict: 'confirmed' },
  created: { change: (d) => ({ ...d, created: '2001-01-01T00:00:00Z' as Data['created'] }), verdict: 'confirmed' },
}

/** `b` with its one message's id replaced by `id`: another message under a known id (its hashes recomputed). */
function reusing(b: BatchPayload, id: MessageId): BatchPayload {
  const m = b.messages[0]!
  const header = { ...m.header, id }
  const messages = [{ ...m, header, hash: messageHash(header) }]
  return { ...b, messages, hash: sealManifest({ ...b, messages }).hash }
}

/**
 * A member learns an honest message's id (a private batch travels before its pin) and pins a batch of its own reusing
 * it with other content, or reusing its data item's id and value with other carried fields (a datatype, a validator,
 * a creation time); an honest author may send its message again in a second batch carrying its data item with such
 * other fields. The batches reach three in-process members in random orders, all before the chain's pins are read, in
 * a random interleaving: every member stores them all and reaches the same verdict for every (id, hash), each message
 * decided by the data its deciding batch (the first pinned carrying it) carried, and the id alone names the same row
 * everywhere, the confirmed one pinned first.
 */
describe('aggregator: a message id reused with other content, each (id, hash) decided alike on every member (property)', function () {
  this.timeout(240_000)
  const temp = new TempDirs()
  after(() => temp.cleanup())
  const orgs = registeredOrgs(3)
  const group = groupOf(orgs)

  const plan: fc.Arbitrary<Plan> = fc.record({
    honest: fc.array(fc.constantFrom(0 as const, 1 as const), { minLength: 1, maxLength: 3 }),
    reuses: fc.array(
      fc.record({ target: fc.nat(2), at: fc.integer({ min: -1, max: 6 }), carried: fc.constantFrom(undefined, 'datatype' as const, 'validator' as const, 'created' as const) }),
      { minLength: 1, maxLength: 3 },
    ),
    resends: fc.array(fc.record({ target: fc.nat(2), at: fc.integer({ min: -1, max: 6 }), carried: fc.constantFrom('datatype' as const, 'validator' as const, 'created' as const) }), { maxLength: 2 }),
    arrivals: fc.array(fc.integer(), { minLength: 3, maxLength: 3 }),
  })

  async function run(p: Plan): Promise<void> {
    // Each batch on a topic of its own (nonce 0): no pin orders another, and nothing relates messages sharing an id.
    const honest = p.honest.map((author, i) => ({ author, payload: privateBatch(orgs[author]!, group, [[`h${i}`]], [[0]]) }))
    const reuses = p.reuses.map((r, i) => {
      const taken = honest[r.target % honest.length]!.payload
      const own = privateBatch(orgs[2]!, group, [[`r${i}`]], [[0]])
      if (r.carried === undefined) return { payload: reusing(own, taken.messages[0]!.header.id), at: r.at, verdict: 'confirmed' }
      // The honest data item's id and value, other carried fields: the same (id, hash), another digest.
      const { change, verdict } = CARRIED[r.carried]
      return { payload: carryingData(own, change(taken.data[0]!)), at: r.at, verdict }
    })
    const resends = p.resends.map((r) => {
      const h = honest[r.target % honest.length]!
      const { change, verdict } = CARRIED[r.carried]
      return { author: h.author, payload: resent(h.payload, change), at: r.at, verdict }
    })
    const verdictOf = new Map<BatchPayload, string>([...reuses, ...resends].map((r) => [r.payload, r.verdict]))
    // The chain: honest pins at 2i, reuses and resends placed among them by their sort key (ties: those first).
    const chain = [
      ...honest.map((h, i) => ({ key: 2 * i, author: h.author as number, payload: h.payload })),
      ...reuses.map((r) => ({ key: r.at - 0.5, author: 2, payload: r.payload })),
      ...resends.map((r) => ({ key: r.at - 0.25, author: r.author as number, payload: r.payload })),
    ]
    chain.sort((x, y) => x.key - y.key)
    // Each (id, hash) is decided by the first batch on chain carrying it: its verdict, and the data that batch carried.
    const decider = new Map<string, BatchPayload>()
    for (const c of chain) {
      const m = c.payload.messages[0]!
      if (!decider.has(`${m.header.id}/${m.hash}`)) decider.set(`${m.header.id}/${m.hash}`, c.payload)
    }
    const decidedBy = (b: BatchPayload) => decider.get(`${b.messages[0]!.header.id}/${b.messages[0]!.hash}`)!
    const expectedState = (b: BatchPayload) => verdictOf.get(decidedBy(b)) ?? 'confirmed'

    const members: AggregatorMember[] = []
    try {
      for (let i = 0; i < 3; i++) {
        const m = await AggregatorMember.open(join(await temp.make('parley-reuse-'), 'db'), new MemoryStorage(), { org: orgs[i]!.org, node: orgs[i]!.node, key: orgs[i]!.key })
        await m.register(orgs, [group])
        members.push(m)
      }
      await Promise.all(
        members.map(async (m, i) => {
          const next = random(p.arrivals[i]!)
          const waiting = [...chain]
          while (waiting.length > 0) {
            const c = waiting.splice(Math.floor(next() * waiting.length), 1)[0]!
            expect(await m.deliver(peerOf(orgs[c.author]!), c.payload), 'stored beside, not refused').to.equal(undefined)
          }
          for (const c of chain) await m.pin(pinLogOf({ payload: c.payload }))
        }),
      )
      // For each id, the confirmed message of the first pin carrying it is the one the id alone names.
      const first = new Map<string, string>()
      for (const c of chain) {
        const m = c.payload.messages[0]!
        if (!first.has(m.header.id) && expectedState(c.payload) === 'confirmed') first.set(m.header.id, m.hash)
      }
      const verdicts = members.map((m) => chain.map((c) => m.r.messages.byRef(c.payload.messages[0]!.header.id, c.payload.messages[0]!.hash)?.state))
      for (const v of verdicts) expect(v, 'the same verdict for every (id, hash) on every member').to.deep.equal(verdicts[0])
      for (const m of members) {
        for (const c of chain) {
          const sent = c.payload.messages[0]!
          const held = m.r.messages.byRef(sent.header.id, sent.hash)
          expect(held?.state, `id ${sent.header.id} hash ${sent.hash}: ${held?.rejectReason ?? ''}`).to.equal(expectedState(c.payload))
          // Its data as its deciding batch carried it, whatever another batch carried under the same id and hash.
          const carried = decidedBy(c.payload).data[0]!
          const data = m.r.data.getMany(held!.data)
          expect(data.map((d) => [d.id, d.validator, d.created, d.datatype?.name]), 'the data its batch carried').to.deep.equal([[carried.id, carried.validator, carried.created, carried.datatype?.name]])
        }
        for (const [id, hash] of first) expect(m.r.messages.get(id)?.hash, `the id alone: ${id}`).to.equal(hash)
        // The event of each verdict names its own row.
        for (const e of m.r.events.list({ namespace: 'default', limit: 1000, skip: 0, ascending: true })) {
          const row = m.r.messages.byRef(e.reference, e.referenceHash!)
          expect(row?.state, e.type).to.equal(e.type === 'message_confirmed' ? 'confirmed' : 'rejected')
        }
      }
    } finally {
      for (const m of members) await m.close()
    }
  }

  it('holds for random interleavings and arrival orders', async () => {
    await fc.assert(fc.asyncProperty(plan, run), { numRuns: 8, seed: 31 })
  })
})
