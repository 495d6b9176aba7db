import { expect } from 'chai'
import { readFileSync, writeFileSync } from 'node:fs'
import { layout } from '../../network/layout.js'
import type { MemberDescription } from '../../network/description.js'
import { waitUntil } from '../support/wait.js'
import { suiteNetwork } from '../support/network.js'
import { broadcast, confirmationOrder, confirmedEvents, get, nsBase, plain, runId, send, waitConfirmedAll, type ApiData, type ApiMessage } from '../support/api.js'
import { chainOrder } from '../support/chain-order.js'

describe('broadcast through SIGKILL and restart', function () {
  this.timeout(120_000)
  // org2, the receiver SIGKILLed mid-stream, keeps its state in PostgreSQL; org0 and org1 in sql.js.
  const t = suiteNetwork('bcast-recovery', { onPostgres: ['org2'] })
  const { members } = t
  const run = runId()

  /** Every member confirmed every id, each once, in the same per-topic order, and that order is the chain's. */
  async function expectSameOrderEverywhere(ns: string, topicOf: Map<string, string>): Promise<void> {
    await Promise.all(members.map((m) => waitConfirmedAll(m, ns, topicOf.keys(), 60_000)))
    const { order } = await chainOrder(t.net.description, topicOf)
    expect([...order.values()].flat(), 'every message pinned once').to.have.length(topicOf.size)
    for (const m of members) {
      expect(plain(await confirmationOrder(m, ns, topicOf)), `${m.org}: per-topic confirmation order equals the pin order`).to.deep.equal(plain(order))
    }
  }

  it('a receiving member SIGKILLed in the middle of a stream catches up after its restart, in the same order as the others', async () => {
    const ns = `recv-${run}`
    const topics = [`ra-${run}`, `rb-${run}`]
    const [org0, org1, org2] = members as [MemberDescription, MemberDescription, MemberDescription]
    const topicOf = new Map<string, string>()
    const stream = async (m: MemberDescription, from: number, count: number): Promise<void> => {
      for (let i = from; i < from + count; i++) {
        const topic = topics[i % 2]!
        const msg = await send(m, ns, topic, { from: m.org, i })
        topicOf.set(msg.header.id, topic)
      }
    }

    // Phase 1: both senders stream; node2 is killed once it has confirmed some of it, while the stream runs.
    const phase1 = Promise.all([stream(org0, 0, 20), stream(org1, 0, 20)])
    await waitUntil('node2 to confirm part of the stream', async () => (await confirmedEvents(org2, ns)).length >= 5, { timeoutMs: 30_000, intervalMs: 50 })
    await t.net.kill('node2', 'SIGKILL')
    await phase1

    // Phase 2: sent while node2 is down, and while it starts again.
    const restarted = t.net.restart('node2')
    await Promise.all([stream(org0, 20, 20), stream(org1, 20, 20)])
    await restarted
    // Phase 3: after its restart.
    await Promise.all([stream(org0, 40, 10), stream(org1, 40, 10)])

    expect(topicOf.size).to.equal(100)
    await expectSameOrderEverywhere(ns, topicOf)
    // node2 holds the data too, not just the confirmations.
    const any = [...topicOf.keys()][57]!
    const data = await get<ApiData[]>(`${nsBase(org2, ns)}/messages/${any}/data`)
    expect(data.status).to.equal(200)
    expect(data.body[0]!.value).to.have.property('i')
  })

  it('a message answered 202 just before its sender is SIGKILLed is delivered to every member after the sender restarts', async () => {
    const ns = `sender-${run}`
    const topic = `s-${run}`
    const org1 = members[1]!
    const accepted: ApiMessage[] = []
    for (let i = 0; i < 3; i++) accepted.push(await send(org1, ns, topic, { last: i }))
    // Killed at once: well inside the 500 ms the batch waits for more messages, so nothing is pinned yet.
    await t.net.kill('node1', 'SIGKILL')
    for (const m of [members[0]!, members[2]!]) {
      const r = await get<ApiMessage>(`${nsBase(m, ns)}/messages/${accepted[2]!.header.id}`)
      expect(r.status, `${m.org} already had the message before the sender restarted: the kill came too late to test anything`).to.equal(404)
    }

    await t.net.restart('node1')
    const topicOf = new Map(accepted.map((a) => [a.header.id, topic]))
    await expectSameOrderEverywhere(ns, topicOf)
    for (const m of members) {
      const order = await confirmationOrder(m, ns, topicOf)
      expect(order.get(topic), `${m.org}: in send order`).to.deep.equal(accepted.map((a) => a.header.id))
      const got = await get<ApiMessage>(`${nsBase(m, ns)}/messages/${accepted[2]!.header.id}?fetchdata=true`)
      expect(got.body.state).to.equal('confirmed')
      expect(got.body.hash, 'the same message, not a re-made one').to.equal(accepted[2]!.hash)
      expect(got.body.header.created).to.equal(accepted[2]!.header.created)
      expect(got.body.data.map((d) => d.value)).to.deep.equal([{ last: 2 }])
    }
  })

  it('a sender SIGKILLed while its batches are in flight: every message it answered 202 reaches every member, once, in one order', async () => {
    const ns = `flight-${run}`
    const topics = [`fa-${run}`, `fb-${run}`, `fc-${run}`]
    const org0 = members[0]!
    const topicOf = new Map<string, string>()
    let stop = false
    let n = 0
    // Four concurrent streams; the requests in flight at the kill fail, and may or may not have been stored.
    const lane = async (): Promise<void> => {
      while (!stop) {
        const i = n++
        const topic = topics[i % topics.length]!
        try {
          const r = await broadcast(org0, ns, { header: { topics: [topic] }, data: [{ value: { i } }] })
          if (r.status === 202) topicOf.set(r.body.header.id, topic)
        } catch {
          return
        }
      }
    }
    const lanes = Promise.all([lane(), lane(), lane(), lane()])
    // Kill once some batches have been pinned and confirmed by the others, with more still being accepted.
    await waitUntil('org2 to confirm part of the stream', async () => (await confirmedEvents(members[2]!, ns)).length >= 20, { timeoutMs: 30_000, intervalMs: 50 })
    await t.net.kill('node0', 'SIGKILL')
    stop = true
    await lanes
    const acceptedAtKill = topicOf.size
    const othersHadAtKill = (await confirmedEvents(members[2]!, ns)).length
    expect(othersHadAtKill, 'some accepted messages were still in flight at the kill').to.be.lessThan(acceptedAtKill)

    await t.net.restart('node0')
    await expectSameOrderEverywhere(ns, topicOf)
    // Nothing was confirmed twice (a batch pinned again after the restart is ordered once).
    for (const m of members) {
      const refs = (await confirmedEvents(m, ns)).map((e) => e.reference)
      expect(new Set(refs).size, m.org).to.equal(refs.length)
    }
  })

  // Last in the file: it reconfigures two members.
  it('many small batches at once (batch size 1): every member confirms them all, in one order, however they interleave with the aggregator', async () => {
    const senders = [members[0]!, members[1]!]
    const L = layout(t.dir)
    for (const m of senders) {
      const file = L.member(m.org).config
      writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), batch: { size: 1, timeoutMs: 0 } }))
      await t.net.kill(m.node, 'SIGTERM')
      await t.net.restart(m.node)
    }
    const ns = `small-${run}`
    const topics = [0, 1, 2].map((i) => `s${i}-${run}`)
    const topicOf = new Map<string, string>()
    // Two senders, four concurrent lanes each: one pinBatch per message, batches arriving while passes run.
    await Promise.all(
      senders.flatMap((m) =>
        [0, 1, 2, 3].map(async (lane) => {
          for (let i = 0; i < 15; i++) {
            const topic = topics[(i + lane) % 3]!
            topicOf.set((await send(m, ns, topic, { lane, i })).header.id, topic)
          }
        }),
      ),
    )
    await Promise.all(members.map((m) => waitConfirmedAll(m, ns, topicOf.keys(), 40_000)))
    const { order, batches } = await chainOrder(t.net.description, topicOf)
    expect(batches, 'one batch per message').to.have.length(topicOf.size)
    for (const m of members) expect(plain(await confirmationOrder(m, ns, topicOf)), m.org).to.deep.equal(plain(order))
  })
})
