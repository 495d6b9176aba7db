import { expect } from 'chai'
import { existsSync, readFileSync } from 'node:fs'
import type { MemberDescription } from '../../network/description.js'
import { layout } from '../../network/layout.js'
import { suiteNetwork } from '../support/network.js'
import { runId, send, waitConfirmedAll, type ApiMessage } from '../support/api.js'
import { EventSocket, closeEventSockets, createSubscription, currentOffset, eventLog, expectNoRepeats, rootWs, sleep, waitOffset, type DeliveredEvent } from '../support/events.js'

const ids = (events: readonly DeliveredEvent[]): string[] => events.map((e) => e.id)

async function sendMany(m: MemberDescription, ns: string, topic: string, n: number): Promise<ApiMessage[]> {
  const out: ApiMessage[] = []
  for (let i = 0; i < n; i++) out.push(await send(m, ns, topic, { i }))
  return out
}

/**
 * Durable subscriptions through SIGKILL and restart (issue 11, items 4 and 7): a node killed without warning resumes
 * every durable subscription from the offset it stored, delivering everything after it, nothing before it, and
 * again what was in flight unacknowledged at the kill, so no event is lost and none is acknowledged twice.
 */
describe('durable event subscriptions through SIGKILL and restart', function () {
  this.timeout(240_000)
  // org1, whose subscriptions resume after each SIGKILL, keeps its state in PostgreSQL; org0 and org2 in sql.js.
  const t = suiteNetwork('events-recovery', { onPostgres: ['org1'] })
  const { members } = t
  const run = runId()

  afterEach(closeEventSockets)
  // On a failure, the event lines of the member under test, read before the suite stops the network.
  afterEach(function () {
    if (this.currentTest?.state !== 'failed') return
    const m = members[1]!
    const f = layout(t.dir).log(m.node)
    const lines = (existsSync(f) ? readFileSync(f, 'utf8') : '').split('\n').filter((l) => /events|subscription|error|Error/.test(l)).slice(-60)
    console.log(`--- ${m.node} (${m.org}) log, ${lines.length} relevant lines ---\n${lines.join('\n')}`)
  })

  it('resumes every durable subscription from its stored offset after a SIGKILL: no loss, nothing acknowledged twice, in-flight events again', async () => {
    const [org0, org1, org2] = members as [MemberDescription, MemberDescription, MemberDescription]
    const ns = `evrec-${run}`
    const filter = { events: 'message_confirmed' }

    // On org1: one subscription whose client acknowledges everything, one whose client holds events unacknowledged
    // at the kill, and one no client has connected to yet.
    await createSubscription(org1, ns, { name: 'acked', filter, options: { readAhead: 5 } })
    await createSubscription(org1, ns, { name: 'inflight', filter, options: { readAhead: 4 } })
    const idle = await createSubscription(org1, ns, { name: 'idle', filter })
    const idleOffset = await currentOffset(org1, ns, 'idle')

    const a1 = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=acked`), { ack: true })
    const b1 = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=inflight`))
    const first = await sendMany(org0, ns, `r1-${run}`, 10)
    await waitConfirmedAll(org1, ns, first.map((m) => m.header.id))
    const before = await eventLog(org1, ns)
    expect(before).to.have.length(10)

    await a1.untilEvents(10)
    expect(ids(a1.events)).to.deep.equal(ids(before))
    // Stored before the kill: the offset of the last acknowledged event.
    await waitOffset(org1, ns, 'acked', before[9]!.sequence)

    // readAhead 4: five in flight; two acknowledged, so two more come; five stay unacknowledged at the kill.
    await b1.untilEvents(5)
    for (const e of b1.events.slice(0, 2)) b1.sendAck(e.id, e.subscription)
    await waitOffset(org1, ns, 'inflight', before[1]!.sequence)
    await b1.untilEvents(7)
    expect(ids(b1.events)).to.deep.equal(ids(before.slice(0, 7)))
    expect(await currentOffset(org1, ns, 'idle'), 'no client, no movement').to.equal(idleOffset)

    await t.net.kill(org1.node, 'SIGKILL')
    await Promise.all([a1.closed, b1.closed])

    // While org1 is dead, more messages from the other members: org1 reads their pins after it restarts.
    const second = [...(await sendMany(org0, ns, `r2-${run}`, 6)), ...(await sendMany(org2, ns, `r3-${run}`, 4))]
    await waitConfirmedAll(org0, ns, second.map((m) => m.header.id), 90_000)

    await t.net.restart(org1.node)
    // Reconnect at once, before org1 has caught up: what it confirms from now on is pushed to the clients as it comes.
    const a2 = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=acked`), { ack: true })
    const b2 = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=inflight`), { ack: true })
    const c2 = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=idle`), { ack: true })

    await waitConfirmedAll(org1, ns, [...first, ...second].map((m) => m.header.id), 120_000)
    const log = await eventLog(org1, ns)
    expect(log, 'one event per message').to.have.length(20)
    expect(ids(log.slice(0, 10)), 'the events from before the kill are kept as they were').to.deep.equal(ids(before))
    expect(log.slice(0, 10).map((e) => e.sequence)).to.deep.equal(before.map((e) => e.sequence))
    const last = log[19]!.sequence
    for (const name of ['acked', 'inflight', 'idle']) await waitOffset(org1, ns, name, last, 90_000)
    await sleep(600)

    expect(ids(a2.events), 'acked: exactly the events after its stored offset').to.deep.equal(ids(log.slice(10)))
    expect(ids(b2.events), 'inflight: the five unacknowledged at the kill again, then the rest; never the two acknowledged').to.deep.equal(ids(log.slice(2)))
    expect(ids(c2.events), 'idle: everything after its locked-in start').to.deep.equal(ids(log))
    for (const e of c2.events) expect(e.subscription).to.deep.equal({ id: idle.id, namespace: ns, name: 'idle' })

    // Nothing acknowledged twice, nothing left unacknowledged, across the kill.
    for (const [name, acks] of [
      ['acked', [...a1.acked, ...a2.acked]],
      ['inflight', [...b1.acked, ...b2.acked]],
      ['idle', c2.acked],
    ] as const) {
      expectNoRepeats(acks, `${name}: acknowledgements`)
      expect([...acks].sort(), `${name}: every event acknowledged once`).to.deep.equal(ids(log).sort())
    }
  })

  it('after a second SIGKILL with nothing new, a reconnecting client gets nothing again', async () => {
    const org1 = members[1]!
    const ns = `evrec-${run}`
    const offset = await currentOffset(org1, ns, 'acked')
    await t.net.kill(org1.node, 'SIGKILL')
    await t.net.restart(org1.node)
    expect(await currentOffset(org1, ns, 'acked'), 'the stored offset survived').to.equal(offset)
    const s = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=acked`), { ack: true })
    const probe = await send(members[0]!, ns, `r4-${run}`, 'after')
    await s.eventFor(probe.header.id, 'message_confirmed', 90_000)
    await sleep(600)
    expect(s.events.map((e) => e.reference), 'only the new message').to.deep.equal([probe.header.id])
  })
})
