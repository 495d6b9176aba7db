import { expect } from 'chai'
import fc from 'fast-check'
import { join } from 'node:path'
import { serializeBatch } from '../../../../node/batch/payload.js'
import { broadcastContext } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type Hash, type TxId } from '../../../../node/core/ids.js'
import type { PinnedBatch } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { MemoryStorage } from '../../../support/storage.js'
import { seededRandom as random } from '../../../support/seeded-random.js'
import { AggregatorMember, broadcastBatch, pinLogOf, registeredOrgs, type PinLog, type SealedBatch } from '../../../support/aggregator-member.js'

const TOPICS = ['a', 'b', 'c']
const randomHash = (): Hash => (newId().replace(/-/g, '') + newId().replace(/-/g, '')) as Hash

/** What a squatter does to an honest batch: each is a pin of its own, anywhere in the chain's order. */
type Squat = 'stranger-garbage' | 'wrong-hash' | 'garbage-contexts' | 'bad-reference' | 'copy'

interface Plan {
  /** Honest batches: author (org0 or org1) and the topics of their one message. */
  honest: { author: 0 | 1; topics: string[] }[]
  /** Squats: which honest batch, what kind, and where in the chain among the others (a sort key). */
  squats: { target: number; kind: Squat; at: number }[]
  /** Per member, the seed of the order its payloads arrive in. */
  arrivals: number[]
}

/**
 * Random interleavings of honest and squatting pins on chain, and random arrival orders of their payloads at three
 * in-process members (each its own database, fetcher and aggregator; one shared storage): every member confirms
 * every honest message and nothing else, and on each topic in the chain's order of the honest pins.
 */
describe('aggregator: the same verdicts on every member, whatever squats and arrives when (property)', function () {
  this.timeout(240_000)
  const temp = new TempDirs()
  after(() => temp.cleanup())
  const orgs = registeredOrgs(3)
  const squatter = orgs[2]!

  const plan: fc.Arbitrary<Plan> = fc.record({
    honest: fc.array(fc.record({ author: fc.constantFrom(0 as const, 1 as const), topics: fc.subarray(TOPICS, { minLength: 1, maxLength: 2 }) }), { minLength: 1, maxLength: 4 }),
    squats: fc.array(fc.record({ target: fc.nat(3), kind: fc.constantFrom<Squat>('stranger-garbage', 'wrong-hash', 'garbage-contexts', 'bad-reference', 'copy'), at: fc.integer({ min: -1, max: 8 }) }), { maxLength: 5 }),
    arrivals: fc.array(fc.integer(), { minLength: 3, maxLength: 3 }),
  })

  async function run(p: Plan): Promise<void> {
    const storage = new MemoryStorage()
    const upload = async (text: string) => storage.upload(new TextEncoder().encode(text))
    const junk = await upload('{"not":"a batch"}')
    const honest: SealedBatch[] = []
    for (const h of p.honest) {
      const payload = broadcastBatch(orgs[h.author]!.org, orgs[h.author]!.key, [h.topics])
      honest.push({ payload, ref: await upload(serializeBatch(payload)) })
    }
    // The chain: honest pins at 2i, squats placed among them by their sort key (ties: the squat first).
    const chain: { key: number; log: PinLog; fetched: boolean }[] = honest.map((b, i) => ({ key: 2 * i, log: pinLogOf(b), fetched: true }))
    for (const s of p.squats) {
      const b = honest[s.target % honest.length]!
      const log = pinLogOf(b, { signer: squatter.key })
      const squat = {
        'stranger-garbage': { ...log, signer: '0x' + randomHash().slice(0, 40), batchId: newId<BatchId>(), batchHash: randomHash(), txId: newId<TxId>(), payloadRef: `ref-${'0'.repeat(64)}` },
        'wrong-hash': { ...log, batchHash: randomHash() },
        'garbage-contexts': { ...log, contexts: log.contexts.map(() => broadcastContext('garbage')) },
        'bad-reference': { ...log, payloadRef: junk },
        copy: log,
      }[s.kind]
      // A payload that never comes (a reference to nothing) is never fetched: the pin waits on every member alike.
      chain.push({ key: s.at - 0.5, log: squat, fetched: s.kind !== 'stranger-garbage' })
    }
    chain.sort((x, y) => x.key - y.key)

    const members: AggregatorMember[] = []
    try {
      for (let i = 0; i < 3; i++) {
        const m = await AggregatorMember.open(join(await temp.make('parley-prop-'), 'db'), storage, { org: orgs[i]!.org, node: orgs[i]!.node, key: orgs[i]!.key })
        await m.register(orgs)
        members.push(m)
      }
      await Promise.all(
        members.map(async (m, i) => {
          const next = random(p.arrivals[i]!)
          const waiting: PinnedBatch[] = []
          for (const step of chain) {
            const before = m.announced.length
            await m.pin(step.log)
            if (step.fetched && m.announced.length > before) waiting.push(m.announced[before]!)
            // Some of what has been announced arrives now, in a random order; the rest later.
            while (waiting.length > 0 && next() < 0.5) await m.fetch(waiting.splice(Math.floor(next() * waiting.length), 1)[0]!)
          }
          while (waiting.length > 0) await m.fetch(waiting.splice(Math.floor(next() * waiting.length), 1)[0]!)
        }),
      )
      const expected = honest.map((b) => b.payload.messages[0]!.header.id)
      const perTopic = (ids: string[]) => TOPICS.map((t) => ids.filter((id) => honest.find((b) => b.payload.messages[0]!.header.id === id)!.payload.messages[0]!.header.topics.includes(t)))
      for (const m of members) {
        const confirmed = m.confirmed()
        expect([...confirmed].sort(), 'every honest message, and nothing else').to.deep.equal([...expected].sort())
        expect(perTopic(confirmed), 'on each topic, in the chain’s order of the honest pins').to.deep.equal(perTopic(expected))
      }
    } finally {
      for (const m of members) await m.close()
    }
  }

  it('holds for random interleavings and arrival orders', async () => {
    await fc.assert(fc.asyncProperty(plan, run), { numRuns: 12, seed: 31 })
  })
})
