import { expect } from 'chai'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import type { MemberDescription } from '../../network/description.js'
import { layout } from '../../network/layout.js'
import { waitFor } from '../../network/process.js'
import { suiteNetwork } from '../support/network.js'
import { confirmationOrder, confirmedEvents, get, nsBase, plain, request, runId, waitConfirmedAll, type ApiMessage } from '../support/api.js'

/**
 * Private deliveries through SIGKILL and restart (issue 10, item 9): the durable delivery queue outlives a dead
 * recipient and a dead sender, every message answered 202 is confirmed once on each member of its group, in per-topic
 * send order, and a member outside the group never sees any of it.
 */
describe('private messaging through SIGKILL and restart', function () {
  this.timeout(240_000)
  // org0, the sender SIGKILLed after its 202, keeps its state in PostgreSQL; org1 and org2 in sql.js.
  const t = suiteNetwork('priv-recovery', { onPostgres: ['org0'] })
  const { members } = t
  const run = runId()
  /** Per namespace, every message answered 202 and its topic: the duplicate and non-member checks cover them all. */
  const sentIn = new Map<string, Map<string, string>>()

  const logOf = (m: MemberDescription): string => {
    const f = layout(t.dir).log(m.node)
    return existsSync(f) ? readFileSync(f, 'utf8') : ''
  }
  const lines = (m: MemberDescription, re: RegExp): string[] => logOf(m).split('\n').filter((l) => re.test(l))

  async function sendPrivate(from: MemberDescription, to: MemberDescription, ns: string, topic: string, value: unknown): Promise<ApiMessage> {
    const r = await request<ApiMessage>('POST', `${nsBase(from, ns)}/messages/private`, {
      header: { topics: [topic] },
      group: { members: [{ identity: to.org }] },
      data: [{ value }],
    })
    if (r.status !== 202) throw new Error(`${from.org}: private send on ${topic} answered ${r.status} ${JSON.stringify(r.body)}`)
    expect(r.body.header.type).to.equal('private')
    expect(r.body.state).to.equal('ready')
    const topics = sentIn.get(ns) ?? new Map<string, string>()
    topics.set(r.body.header.id, topic)
    sentIn.set(ns, topics)
    return r.body
  }

  const expectedOrder = (sent: ApiMessage[], topicOf: Map<string, string>): Record<string, string[]> => {
    const out: Record<string, string[]> = {}
    for (const m of sent) (out[topicOf.get(m.header.id)!] ??= []).push(m.header.id)
    return out
  }

  // org0, the sender of both scenarios, gives up a send after two attempts 250 ms apart (p2p.retry) instead of the
  // default seven over 31.5 s: what carries a delivery to a peer that is down is then the delivery queue's own durable
  // retry, at once rather than after half a minute of the exchange's retries.
  before(async function () {
    const org0 = members[0]!
    const file = layout(t.dir).member(org0.org).config
    const cfg = JSON.parse(readFileSync(file, 'utf8')) as { p2p: object }
    writeFileSync(file, JSON.stringify({ ...cfg, p2p: { ...cfg.p2p, retry: { attempts: 2, firstWaitMs: 250, maxWaitMs: 250 } } }))
    await t.net.kill(org0.node, 'SIGTERM')
    await t.net.restart(org0.node)
  })

  // On a failure, the exchange and delivery lines of every member, read before the suite stops the network.
  afterEach(function () {
    if (this.currentTest?.state !== 'failed') return
    for (const m of members) {
      const relevant = lines(m, /delivery:|exchange:|p2p:|error|Error|private/).slice(-60)
      console.log(`--- ${m.node} (${m.org}) log, ${relevant.length} relevant lines ---\n${relevant.join('\n')}`)
    }
  })

  it('a recipient SIGKILLed while deliveries are queued gets them all after it restarts, in per-topic order', async () => {
    const ns = `rcpt-${run}`
    const topics = [`ra-${run}`, `rb-${run}`]
    const [org0, org1] = members as [MemberDescription, MemberDescription, MemberDescription]
    const N = 30

    await t.net.kill(org1.node, 'SIGKILL')
    const sent: ApiMessage[] = []
    // In three bursts with pauses longer than the 500 ms batch timeout: several batches queue for the dead peer.
    for (let i = 0; i < N; i++) {
      if (i > 0 && i % 10 === 0) await new Promise((r) => setTimeout(r, 800))
      sent.push(await sendPrivate(org0, org1, ns, topics[i % 2]!, { i }))
    }
    const topicOf = sentIn.get(ns)!
    const ids = sent.map((m) => m.header.id)
    const group = sent[0]!.header.group
    for (const m of sent) expect(m.header.group, 'one group for the same members').to.equal(group)

    // The sender is not held by the dead recipient: it pins and confirms its own messages.
    await waitConfirmedAll(org0, ns, ids, 60_000)
    const batches = new Set<string>()
    for (const id of ids) batches.add((await get<ApiMessage>(`${nsBase(org0, ns)}/messages/${id}`)).body.batch ?? '')
    expect(batches.size, 'several batches queued for the dead recipient').to.be.greaterThan(1)
    // Let the exchange's retries inside one send run out (p2p.retry, above), so the queue's own durable retry is what
    // carries the delivery, not a send that happened to be still retrying when the peer came back.
    await waitFor(
      `${org0.org} to log a delivery to ${org1.node} as not delivered yet`,
      () => lines(org0, /delivery: batch .* not delivered yet/).length > 0,
      { timeoutMs: 60_000, intervalMs: 500 },
    )
    const notYet = lines(org0, /delivery: batch .* not delivered yet/)

    const restartedAt = Date.now()
    await t.net.restart(org1.node)
    await waitConfirmedAll(org1, ns, ids, 90_000)
    const caughtUpMs = Date.now() - restartedAt

    const expected = expectedOrder(sent, topicOf)
    expect(plain(await confirmationOrder(org1, ns, topicOf)), `${org1.org}: per-topic send order`).to.deep.equal(expected)
    expect(plain(await confirmationOrder(org0, ns, topicOf)), `${org0.org}: per-topic send order`).to.deep.equal(expected)
    // The data came along, and the recipient learned the group (from the groupinit queued with the first batch).
    const data = await get<{ value: unknown }[]>(`${nsBase(org1, ns)}/messages/${ids[17]}/data`)
    expect(data.status).to.equal(200)
    expect(data.body.map((d) => d.value)).to.deep.equal([{ i: 17 }])
    expect((await get(`${nsBase(org1, ns)}/groups/${group}`)).status).to.equal(200)
    const delivered = lines(org0, /delivery: batch .* delivered to .* after \d+ attempts/)
    expect(delivered.length, `${org0.org} logs the late deliveries (had: ${notYet.join(' | ')})`).to.be.greaterThan(0)
    console.log(`      org1 confirmed all ${N} ${(caughtUpMs / 1000).toFixed(1)} s after its restart; ${batches.size} batches; org0: ${notYet.length} not-yet line(s), ${delivered.length} late-delivery line(s)`)
  })

  it('a message answered 202 just before its sender is SIGKILLed is delivered after the sender restarts', async () => {
    const ns = `sndr-${run}`
    const topic = `s-${run}`
    const [org0, org1] = members as [MemberDescription, MemberDescription, MemberDescription]
    const M = 5
    const sent: ApiMessage[] = []
    // A first batch goes out normally; the last two messages are sent after it and the sender is killed at once,
    // well inside the 500 ms a batch waits for more messages.
    for (let i = 0; i < M; i++) {
      if (i === M - 2) await new Promise((r) => setTimeout(r, 800))
      sent.push(await sendPrivate(org0, org1, ns, topic, { last: i }))
    }
    await t.net.kill(org0.node, 'SIGKILL')
    const last = sent[M - 1]!
    expect((await get(`${nsBase(org1, ns)}/messages/${last.header.id}`)).status, `${org1.org} already had the last message before the sender restarted: the kill came too late to test anything`).to.equal(404)

    const restartedAt = Date.now()
    await t.net.restart(org0.node)
    const ids = sent.map((m) => m.header.id)
    await waitConfirmedAll(org1, ns, ids, 90_000)
    await waitConfirmedAll(org0, ns, ids, 60_000)
    const caughtUpMs = Date.now() - restartedAt

    const topicOf = sentIn.get(ns)!
    for (const m of [org0, org1]) {
      expect((await confirmationOrder(m, ns, topicOf)).get(topic), `${m.org}: in send order`).to.deep.equal(ids)
      const got = await get<ApiMessage>(`${nsBase(m, ns)}/messages/${last.header.id}?fetchdata=true`)
      expect(got.body.state).to.equal('confirmed')
      expect(got.body.hash, 'the same message, not a re-made one').to.equal(last.hash)
      expect(got.body.header.created).to.equal(last.header.created)
      expect(got.body.data.map((d) => d.value)).to.deep.equal([{ last: M - 1 }])
    }
    console.log(`      org1 confirmed all ${M} ${(caughtUpMs / 1000).toFixed(1)} s after the sender's restart`)
  })

  it('nothing duplicated: every message confirmed exactly once on each group member; org2, outside the group, never has them (404)', async () => {
    const [org0, org1, org2] = members as [MemberDescription, MemberDescription, MemberDescription]
    expect([...sentIn.keys()], 'both scenarios sent').to.have.length(2)
    // A little longer for any late duplicate (a redelivery after a restart) to land and be counted.
    await new Promise((r) => setTimeout(r, 3000))
    for (const [ns, topicOf] of sentIn) {
      for (const m of [org0, org1]) {
        const counts = new Map<string, number>()
        for (const e of await confirmedEvents(m, ns)) counts.set(e.reference, (counts.get(e.reference) ?? 0) + 1)
        for (const id of topicOf.keys()) expect(counts.get(id) ?? 0, `${m.org}: message_confirmed events for ${id} in ${ns}`).to.equal(1)
        const list = await get<ApiMessage[]>(`${nsBase(m, ns)}/messages?limit=1000`)
        const private_ = list.body.filter((x) => x.header.type === 'private')
        expect(private_.map((x) => x.header.id).sort(), `${m.org}: stores each message once`).to.deep.equal([...topicOf.keys()].sort())
      }
      for (const id of topicOf.keys()) {
        expect((await get(`${nsBase(org2, ns)}/messages/${id}`)).status, `${org2.org}: message ${id}`).to.equal(404)
        expect((await get(`${nsBase(org2, ns)}/messages/${id}/data`)).status, `${org2.org}: data of ${id}`).to.equal(404)
      }
      expect((await get<ApiMessage[]>(`${nsBase(org2, ns)}/messages`)).body, `${org2.org}: no messages in ${ns}`).to.deep.equal([])
      expect(await confirmedEvents(org2, ns), `${org2.org}: no confirmations in ${ns}`).to.deep.equal([])
      const group = (await get<ApiMessage>(`${nsBase(org0, ns)}/messages/${[...topicOf.keys()][0]}`)).body.header.group
      expect((await get(`${nsBase(org2, ns)}/groups/${group}`)).status, `${org2.org}: group ${group}`).to.equal(404)
    }
  })
})
