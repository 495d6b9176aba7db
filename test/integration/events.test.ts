import { expect } from 'chai'
import type { MemberDescription } from '../../network/description.js'
import { suiteNetwork } from '../support/network.js'
import { get, messageReaching, nsBase, request, runId, send, waitConfirmedAll, type ApiMessage } from '../support/api.js'
import {
  EventSocket,
  closeEventSockets,
  createSubscription,
  currentOffset,
  eventLog,
  expectNoRepeats,
  nsWs,
  rootWs,
  sleep,
  subsUrl,
  subscriptionStatus,
  waitOffset,
  wsBase,
  type ApiSubscription,
  type DeliveredEvent,
} from '../support/events.js'

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** How long a socket is watched for a frame that must not come. It bounds nothing about speed. */
const QUIET_MS = 600

/** Broadcasts `n` messages on `topic`, `concurrency` requests at a time; answers them in the order they were made. */
async function sendMany(m: MemberDescription, ns: string, topic: string, n: number, concurrency = 1): Promise<ApiMessage[]> {
  const out: ApiMessage[] = new Array(n)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) {
        const i = next++
        out[i] = await send(m, ns, topic, { i })
      }
    }),
  )
  return out
}

async function sendPrivate(from: MemberDescription, to: MemberDescription, ns: string, header: Record<string, unknown>, value: unknown): Promise<ApiMessage> {
  const r = await request<ApiMessage>('POST', `${nsBase(from, ns)}/messages/private`, { header, group: { members: [{ identity: to.org }] }, data: [{ value }] })
  if (r.status !== 202) throw new Error(`${from.org}: private send answered ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}

const ids = (events: readonly DeliveredEvent[]): string[] => events.map((e) => e.id)
const refs = (events: readonly DeliveredEvent[]): string[] => events.map((e) => e.reference)

/** Each socket's events come in ascending sequence. */
function expectAscending(events: readonly DeliveredEvent[], what: string): void {
  for (let i = 1; i < events.length; i++) expect(events[i]!.sequence, `${what}: event ${i} after ${events[i - 1]!.sequence}`).to.be.greaterThan(events[i - 1]!.sequence)
}

/**
 * Events over WebSockets (issue 11) with real sockets on a real 3-member network: ephemeral listeners, durable
 * subscriptions shared by connections, redelivery of what was not acknowledged, firstEvent, every filter key,
 * protocol errors, and the subscriptions' REST API.
 */
describe('events over WebSockets on a real 3-member network', function () {
  this.timeout(180_000)
  const t = suiteNetwork('events')
  const { members } = t
  const run = runId()
  const org = (i: number): MemberDescription => members[i]!

  afterEach(closeEventSockets)

  describe('ephemeral listeners', () => {
    it('query form on /ws (namespace=default&ephemeral&autoack): message_confirmed for a broadcast sent after it connected, with the message and no data values', async () => {
      const [org0, org1] = [org(0), org(1)]
      const topic = `eph-${run}`
      // Confirmed on org1 before the listener exists: an ephemeral listener starts at the newest event.
      const before = await send(org0, 'default', topic, { before: true })
      await waitConfirmedAll(org1, 'default', [before.header.id])

      const s = await EventSocket.open(rootWs(org1, 'namespace=default&ephemeral&autoack'))
      const after = await send(org0, 'default', topic, { after: true })
      const e = await s.eventFor(after.header.id)

      expect(e.id).to.match(UUID_RE)
      expect(e.sequence).to.be.a('number')
      expect(e.type).to.equal('message_confirmed')
      expect(e.namespace).to.equal('default')
      expect(e.reference).to.equal(after.header.id)
      expect(e.topic).to.equal(topic)
      expect(e.created).to.be.a('string')
      // The referred message: header, hash, state, data references, and never the data values.
      expect(e.message, 'the event carries the message').to.be.an('object')
      expect(e.message!.header.id).to.equal(after.header.id)
      expect(e.message!.header.author).to.equal(org0.did)
      expect(e.message!.header.topics).to.deep.equal([topic])
      expect(e.message!.hash).to.equal(after.hash)
      expect(e.message!.state).to.equal('confirmed')
      expect(e.message!.data).to.have.length(1)
      expect(e.message!.data[0]!.id).to.equal(after.data[0]!.id)
      expect(e.message!.data[0]!.hash).to.equal(after.data[0]!.hash)
      expect(e.message!.data[0], 'no data value in an event').not.to.have.property('value')
      expect(JSON.stringify(e), 'the value sent appears nowhere in the event').not.to.contain('"after"')
      // An ephemeral subscription: a fresh id, and its name is that id.
      expect(e.subscription.id).to.match(UUID_RE)
      expect(e.subscription).to.deep.equal({ id: e.subscription.id, namespace: 'default', name: e.subscription.id })
      // The same event as the log holds.
      const logged = (await eventLog(org1, 'default')).find((x) => x.reference === after.header.id && x.type === 'message_confirmed')!
      expect({ id: e.id, sequence: e.sequence }).to.deep.equal({ id: logged.id, sequence: logged.sequence })

      // autoack: the next event comes without any acknowledgement.
      const third = await send(org0, 'default', topic, { third: true })
      await s.eventFor(third.header.id)
      expect(refs(s.events), 'nothing from before the listener connected').not.to.include(before.header.id)
      expectAscending(s.events, 'ephemeral')
      expect(s.frames.filter((f) => f.type === 'protocol_error')).to.deep.equal([])
    })

    it('start frame on /ws: ephemeral with manual acks; without acks delivery stops at readAhead+1 in flight', async () => {
      const [org0, org1] = [org(0), org(1)]
      const ns = `ephstart-${run}`
      const s = await EventSocket.open(rootWs(org1, ''))
      s.send({ type: 'start', namespace: ns, ephemeral: true, filter: { events: 'message_confirmed' }, options: { readAhead: 1 } })
      // The start is taken before the next frame is read: an ack-free round trip through the socket settles it.
      await sleep(200)
      const sent = await sendMany(org0, ns, `es-${run}`, 4)
      await waitConfirmedAll(org1, ns, sent.map((m) => m.header.id))
      // readAhead 1: two events in flight, then nothing until an acknowledgement.
      await s.untilEvents(2)
      await sleep(QUIET_MS)
      expect(s.events, 'readAhead 1 allows two unacknowledged events').to.have.length(2)
      s.sendAck(s.events[0]!.id, s.events[0]!.subscription)
      await s.untilEvents(3)
      s.ack = true
      s.sendAck(s.events[1]!.id, s.events[1]!.subscription)
      s.sendAck(s.events[2]!.id, s.events[2]!.subscription)
      await s.untilEvents(4)
      const log = (await eventLog(org1, ns)).filter((e) => e.type === 'message_confirmed')
      expect(ids(s.events), 'every event once, in log order').to.deep.equal(ids(log))
      expect(refs(s.events).sort()).to.deep.equal(sent.map((m) => m.header.id).sort())
      for (const e of s.events) expect(e.subscription.name).to.equal(e.subscription.id)
      expect(s.frames.filter((f) => f.type === 'protocol_error')).to.deep.equal([])
    })

    it('on the namespaced path /api/v1/namespaces/{ns}/ws: by query (the namespace from the path) and by a start frame without a namespace', async () => {
      const [org0, org2] = [org(0), org(2)]
      const ns = `ephns-${run}`
      const byQuery = await EventSocket.open(nsWs(org2, ns, 'ephemeral&autoack&filter.events=message_confirmed'))
      const byStart = await EventSocket.open(nsWs(org2, ns, ''))
      byStart.send({ type: 'start', ephemeral: true, autoack: true })
      await sleep(200)
      const m = await send(org0, ns, `en-${run}`, 'x')
      for (const s of [byQuery, byStart]) {
        const e = await s.eventFor(m.header.id)
        expect(e.namespace).to.equal(ns)
        expect(e.subscription.namespace).to.equal(ns)
        expect(e.subscription.name).to.equal(e.subscription.id)
      }
      expect(byQuery.events[0]!.subscription.id, 'two listeners, two ephemeral subscriptions').not.to.equal(byStart.events[0]!.subscription.id)
    })

    it('batch mode (query batch&readahead=3): event_batch frames of at most 3 events, acknowledged by batch id, every event once', async () => {
      const [org0, org1] = [org(0), org(1)]
      const ns = `batch-${run}`
      const s = await EventSocket.open(rootWs(org1, `namespace=${ns}&ephemeral&batch&readahead=3&batchtimeout=100ms`), { ack: true })
      const sent = await sendMany(org0, ns, `b-${run}`, 7, 7)
      await waitConfirmedAll(org1, ns, sent.map((m) => m.header.id))
      await s.untilEvents(7)
      const batches = s.frames.filter((f) => f.type === 'event_batch')
      expect(batches.length, 'several batches (one in flight at a time, each at most 3)').to.be.greaterThan(2)
      for (const b of batches) {
        expect(b.id).to.match(UUID_RE)
        expect(b.events!.length).to.be.within(1, 3)
        expect(b.subscription).to.deep.equal(b.events![0]!.subscription)
      }
      expect(s.frames.filter((f) => f.type !== 'event_batch'), 'only event_batch frames').to.deep.equal([])
      const log = (await eventLog(org1, ns)).filter((e) => e.type === 'message_confirmed')
      expect(ids(s.events)).to.deep.equal(ids(log))
      expect(s.acked).to.deep.equal(batches.map((b) => b.id))
    })
  })

  describe('durable subscriptions', () => {
    it('two connections on one durable subscription receive each of 500 events exactly once between them; the stored offset reaches the last sequence', async () => {
      const [org0, org1] = [org(0), org(1)]
      const ns = `shared-${run}`
      const N = 500
      const sub = await createSubscription(org1, ns, { name: 'shared', filter: { events: 'message_confirmed' }, options: { readAhead: 10 } })
      // One by query on /ws, one by query on the namespaced path: the same subscription either way.
      const a = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=shared`), { ack: true })
      const b = await EventSocket.open(nsWs(org1, ns, 'name=shared'), { ack: true })
      await sleep(200)
      const sent = await sendMany(org0, ns, `sh-${run}`, N, 10)
      const want = new Set(sent.map((m) => m.header.id))
      await waitConfirmedAll(org1, ns, want, 120_000)
      await a.until(`${N} events between two connections`, () => a.events.length + b.events.length >= N, 120_000)

      const log = await eventLog(org1, ns)
      const confirmed = log.filter((e) => e.type === 'message_confirmed' && want.has(e.reference))
      expect(confirmed).to.have.length(N)
      const all = [...a.events, ...b.events]
      expectNoRepeats(ids(all), 'events across both connections')
      expect(ids(all).sort(), 'each of the 500 events, once between them').to.deep.equal(ids(confirmed).sort())
      expect(a.events.length, 'the first connection took a share').to.be.greaterThan(0)
      expect(b.events.length, 'the second connection took a share').to.be.greaterThan(0)
      expectAscending(a.events, 'first connection')
      expectAscending(b.events, 'second connection')
      for (const e of all) expect(e.subscription).to.deep.equal({ id: sub.id, namespace: ns, name: 'shared' })

      await waitOffset(org1, ns, 'shared', log[log.length - 1]!.sequence)
      await sleep(QUIET_MS)
      expect(a.events.length + b.events.length, 'nothing delivered again').to.equal(N)
      console.log(`      500 events split ${a.events.length}/${b.events.length} between the two connections`)
    })

    it('a client that drops without acknowledging gets those events again on reconnect, and never the acknowledged ones', async () => {
      const [org0, org1] = [org(0), org(1)]
      const ns = `drop-${run}`
      await createSubscription(org1, ns, { name: 'dropper', filter: { events: 'message_confirmed' }, options: { readAhead: 4 } })
      const sent = await sendMany(org0, ns, `d-${run}`, 10)
      await waitConfirmedAll(org1, ns, sent.map((m) => m.header.id))
      const log = await eventLog(org1, ns)
      expect(log).to.have.length(10)

      const a = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=dropper`))
      await a.untilEvents(5)
      await sleep(QUIET_MS)
      expect(ids(a.events), 'readAhead 4: five in flight, in order, then nothing without acks').to.deep.equal(ids(log.slice(0, 5)))
      a.sendAck(a.events[0]!.id, a.events[0]!.subscription)
      a.sendAck(a.events[1]!.id, a.events[1]!.subscription)
      await waitOffset(org1, ns, 'dropper', log[1]!.sequence)
      await a.untilEvents(7)
      a.terminate()
      await a.closed

      const b = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=dropper`), { ack: true })
      await b.untilEvents(8)
      await waitOffset(org1, ns, 'dropper', log[9]!.sequence)
      expect(ids(b.events), 'the unacknowledged ones again, first, then the rest; never the two acknowledged').to.deep.equal(ids(log.slice(2)))
      await sleep(QUIET_MS)
      expect(b.events).to.have.length(8)
    })

    it('events acknowledged just before a clean close are not delivered again to a connection made at once after it (three rounds)', async () => {
      const [org0, org1] = [org(0), org(1)]
      const ns = `ackclose-${run}`
      await createSubscription(org1, ns, { name: 'quick', options: { readAhead: 4 } })
      // The race this looks for (acknowledgements still being stored when the next connection reads the offset) is
      // narrow: three rounds give it three chances. Every round must hold exactly.
      let seen = 0
      for (let round = 0; round < 3; round++) {
        const sent = await sendMany(org0, ns, `q-${run}`, 8)
        await waitConfirmedAll(org1, ns, sent.map((m) => m.header.id))
        const log = (await eventLog(org1, ns)).slice(seen)
        expect(log).to.have.length(8)
        seen += 8

        const a = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=quick`))
        await a.untilEvents(5)
        expect(ids(a.events)).to.deep.equal(ids(log.slice(0, 5)))
        for (const e of a.events.slice(0, 3)) a.sendAck(e.id, e.subscription)
        // The acks go before the close on the same socket, so the server reads them first.
        a.close()
        await a.closed
        const b = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=quick`), { ack: true })
        await b.untilEvents(5)
        await waitOffset(org1, ns, 'quick', log[7]!.sequence)
        await sleep(QUIET_MS)
        // Named by their place in this round's log (0-7; 0-2 were acknowledged on the first connection).
        const at = (es: readonly DeliveredEvent[]): string[] => es.map((e) => `log[${log.findIndex((x) => x.id === e.id)}] seq ${e.sequence}`)
        expect(at(b.events.filter((e) => a.acked.includes(e.id))), `round ${round}: acknowledged events delivered again to the next connection`).to.deep.equal([])
        expect(at(b.events), `round ${round}: everything after the three acknowledged, once`).to.deep.equal(at(log.slice(3)))
        b.close()
        await b.closed
      }
    })

    it('events in flight on a connection that drops go to the other connection of the subscription, each acknowledged once', async () => {
      const [org0, org1] = [org(0), org(1)]
      const ns = `handoff-${run}`
      await createSubscription(org1, ns, { name: 'handoff', options: { readAhead: 3 } })
      // `holder` never acknowledges: it holds what it was sent (at most readAhead+1, the subscription's window), while
      // `acker` acknowledges everything it gets. How the events split between them is the node's choice.
      const holder = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=handoff`))
      const acker = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=handoff`), { ack: true })
      await sleep(200)
      const sent = await sendMany(org0, ns, `h-${run}`, 10)
      await waitConfirmedAll(org1, ns, sent.map((m) => m.header.id))
      const log = await eventLog(org1, ns)
      expect(log).to.have.length(10)
      await holder.untilEvents(1)
      await sleep(QUIET_MS)
      const held = ids(holder.events)
      expect(held.length, 'the window is the subscription\'s: the holder holds at most readAhead+1').to.be.within(1, 4)
      for (const id of held) expect(ids(acker.events), 'never an event the holder has, while it is connected').not.to.include(id)

      holder.terminate()
      await holder.closed
      await waitOffset(org1, ns, 'handoff', log[9]!.sequence)
      await sleep(QUIET_MS)
      expectNoRepeats(ids(acker.events), 'the remaining connection')
      expect(ids(acker.events).sort(), 'every event, once, on the connection that acknowledges').to.deep.equal(ids(log).sort())
      expect(ids(acker.events), 'the held events went to it').to.include.members(held)
    })

    it('one connection can start several durable subscriptions and acknowledge each by its subscription', async () => {
      const [org0, org1] = [org(0), org(1)]
      const ns = `multi-${run}`
      const x = await createSubscription(org1, ns, { name: 'x', filter: { topic: `mx-${run}` } })
      const y = await createSubscription(org1, ns, { name: 'y', filter: { topic: `my-${run}` } })
      const s = await EventSocket.open(rootWs(org1, ''), { ack: true })
      s.send({ type: 'start', namespace: ns, name: 'x' })
      s.send({ type: 'start', namespace: ns, name: 'y' })
      await sleep(200)
      const mx = await sendMany(org0, ns, `mx-${run}`, 3)
      const my = await sendMany(org0, ns, `my-${run}`, 3)
      await waitConfirmedAll(org1, ns, [...mx, ...my].map((m) => m.header.id))
      const log = await eventLog(org1, ns)
      await waitOffset(org1, ns, 'x', log[log.length - 1]!.sequence)
      await waitOffset(org1, ns, 'y', log[log.length - 1]!.sequence)
      expect(refs(s.events.filter((e) => e.subscription.id === x.id))).to.deep.equal(mx.map((m) => m.header.id))
      expect(refs(s.events.filter((e) => e.subscription.id === y.id))).to.deep.equal(my.map((m) => m.header.id))
      expect(s.events).to.have.length(6)
      expect(s.frames.filter((f) => f.type === 'protocol_error')).to.deep.equal([])
    })

    it('a start by the name of a subscription not created yet waits for it, without error', async () => {
      const [org0, org1] = [org(0), org(1)]
      const ns = `later-${run}`
      const s = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=later`), { ack: true })
      const early = await send(org0, ns, `l-${run}`, 'before it exists')
      await waitConfirmedAll(org1, ns, [early.header.id])
      await sleep(QUIET_MS)
      expect(s.frames, 'nothing, and no error').to.deep.equal([])
      expect(s.closeCode, 'still open').to.equal(undefined)
      await createSubscription(org1, ns, { name: 'later' })
      const m = await send(org0, ns, `l-${run}`, 'after')
      await s.eventFor(m.header.id)
      expect(refs(s.events), 'from the newest event at its creation').to.deep.equal([m.header.id])
    })
  })

  describe('firstEvent and replacing a subscription', () => {
    const ns = `first-${run}`
    let log: DeliveredEvent[] = []
    const subs: Record<string, ApiSubscription> = {}
    let lockedNewest = 0

    it('oldest, newest (and the default) and a number: locked in at creation, whenever the client connects', async () => {
      const [org0, org1] = [org(0), org(1)]
      const early = await sendMany(org0, ns, `f-${run}`, 3)
      await waitConfirmedAll(org1, ns, early.map((m) => m.header.id))
      const before = await eventLog(org1, ns)
      expect(before).to.have.length(3)
      const [s1, s3] = [before[0]!.sequence, before[2]!.sequence]

      subs.oldest = await createSubscription(org1, ns, { name: 'oldest', options: { firstEvent: 'oldest' } })
      subs.newest = await createSubscription(org1, ns, { name: 'newest', options: { firstEvent: 'newest' } })
      subs.dflt = await createSubscription(org1, ns, { name: 'dflt' })
      subs.num = await createSubscription(org1, ns, { name: 'num', options: { firstEvent: String(s1) } })

      // What each was locked in as (FireFly's form): oldest -1, newest the newest sequence then, a number itself.
      expect(subs.oldest.options.firstEvent).to.equal('-1')
      expect(subs.num.options.firstEvent).to.equal(String(s1))
      lockedNewest = Number(subs.newest.options.firstEvent)
      expect(Number.isSafeInteger(lockedNewest), `newest locked in as a sequence: ${subs.newest.options.firstEvent}`).to.equal(true)
      expect(lockedNewest).to.be.at.least(s3)
      expect(subs.dflt.options.firstEvent, 'no firstEvent is newest').to.match(/^\d+$/)
      expect(Number(subs.dflt.options.firstEvent)).to.be.at.least(lockedNewest)
      for (const name of ['oldest', 'newest', 'dflt', 'num']) {
        const st = await subscriptionStatus(org1, ns, name)
        expect(st.body.options.firstEvent, `GET answers ${name}'s locked firstEvent`).to.equal(subs[name]!.options.firstEvent)
      }
      expect(await currentOffset(org1, ns, 'num')).to.equal(s1)
      expect(await currentOffset(org1, ns, 'newest')).to.equal(lockedNewest)

      // Two more events after creation and before any client connects: newest was locked in at creation, so they count.
      const late = await sendMany(org0, ns, `f-${run}`, 2)
      await waitConfirmedAll(org1, ns, late.map((m) => m.header.id))
      log = await eventLog(org1, ns)
      expect(log).to.have.length(5)
      expect(log[3]!.sequence).to.be.greaterThan(lockedNewest)
      const last = log[4]!.sequence

      const got: Record<string, EventSocket> = {}
      for (const name of ['oldest', 'newest', 'dflt', 'num']) got[name] = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=${name}`), { ack: true })
      for (const name of Object.keys(got)) await waitOffset(org1, ns, name, last)
      await sleep(QUIET_MS)
      expect(ids(got.oldest!.events), 'oldest: the whole log').to.deep.equal(ids(log))
      expect(ids(got.newest!.events), 'newest: what came after creation').to.deep.equal(ids(log.slice(3)))
      expect(ids(got.dflt!.events), 'default (newest): what came after creation').to.deep.equal(ids(log.slice(3)))
      expect(ids(got.num!.events), `firstEvent ${s1}: events with a sequence above it`).to.deep.equal(ids(log.slice(1)))
    })

    it('PUT replacing a subscription keeps its id, its locked firstEvent and its offset', async () => {
      const [org0, org1] = [org(0), org(1)]
      expect(subs.num, 'the previous test created it').to.be.an('object')
      const offsetBefore = await currentOffset(org1, ns, 'num')
      expect(offsetBefore).to.equal(log[4]!.sequence)
      const r = await request<ApiSubscription>('PUT', subsUrl(org1, ns), { name: 'num', filter: { events: 'message_confirmed', topic: `f-${run}` }, options: { firstEvent: 'oldest', readAhead: 3 } })
      expect(r.status, JSON.stringify(r.body)).to.equal(200)
      expect(r.body.id).to.equal(subs.num!.id)
      expect(r.body.created).to.equal(subs.num!.created)
      expect(r.body.options.firstEvent, 'firstEvent stays as locked in at creation').to.equal(subs.num!.options.firstEvent)
      expect(r.body.options.readAhead).to.equal(3)
      expect(r.body.filter.events).to.equal('message_confirmed')
      expect(r.body.filter.topic).to.equal(`f-${run}`)
      expect(await currentOffset(org1, ns, 'num'), 'the offset is kept').to.equal(offsetBefore)
      const again = await get<ApiSubscription>(`${subsUrl(org1, ns)}/${subs.num!.id}`)
      expect(again.body.options.readAhead).to.equal(3)

      // A client connecting now gets only what comes next, not the log from the oldest.
      const s = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=num`), { ack: true })
      const m = await send(org0, ns, `f-${run}`, 'next')
      await s.eventFor(m.header.id)
      await sleep(QUIET_MS)
      expect(refs(s.events)).to.deep.equal([m.header.id])

      // PUT of a new name creates it.
      const created = await request<ApiSubscription>('PUT', subsUrl(org1, ns), { name: 'put-new', options: { firstEvent: 'oldest' } })
      expect(created.status).to.be.oneOf([200, 201])
      expect(created.body.id).to.match(UUID_RE)
      expect(created.body.options.firstEvent).to.equal('-1')
    })
  })

  describe('filters', () => {
    const ns = `filt-${run}`
    let log: DeliveredEvent[] = []
    let a: ApiMessage, b: ApiMessage, p: ApiMessage
    let group = ''
    let n = 0

    /**
     * Everything a durable subscription with `filter` delivers from the oldest event of the namespace on org0: the
     * client acknowledges each, so once the stored offset is the last event's sequence, every event it matches has
     * been delivered and nothing else can come.
     */
    async function delivered(filter: Record<string, unknown>): Promise<DeliveredEvent[]> {
      const m = org(0)
      const name = `f${n++}`
      await createSubscription(m, ns, { name, filter, options: { firstEvent: 'oldest', readAhead: 20 } })
      const s = await EventSocket.open(rootWs(m, `namespace=${ns}&name=${name}`), { ack: true })
      await waitOffset(m, ns, name, log[log.length - 1]!.sequence)
      await sleep(100)
      expectAscending(s.events, name)
      return s.events
    }

    /** The logged events an unanchored regular expression on one value of each event selects (FireFly's MatchString). */
    const where = (re: RegExp, value: (e: DeliveredEvent) => string | readonly string[]): DeliveredEvent[] =>
      log.filter((e) => {
        const v = value(e)
        return (typeof v === 'string' ? [v] : v.length > 0 ? v : ['']).some((x) => re.test(x))
      })

    before(async function () {
      const [org0, org1] = [org(0), org(1)]
      a = await send(org0, ns, `tA-${run}`, 'a', 'alpha')
      b = await send(org1, ns, `tB-${run}`, 'b', 'beta')
      p = await sendPrivate(org0, org1, ns, { topics: [`tP-${run}`], tag: 'gamma' }, 'p')
      group = p.header.group!
      for (const m of [a, b, p]) await messageReaching(org0, ns, m.header.id, ['confirmed'])
      // Settled: the log of org0 no longer grows.
      let prev = -1
      for (;;) {
        log = await eventLog(org0, ns, 'fetchreferences=true')
        if (log.length === prev) break
        prev = log.length
        await sleep(500)
      }
      expect(log.filter((e) => e.type === 'message_confirmed').map((e) => e.reference)).to.include.members([a.header.id, b.header.id, p.header.id])
      expect(log.filter((e) => e.type === 'transaction_submitted').length, 'org0 submitted pins for its batches').to.be.greaterThan(0)
    })

    it('events: an unanchored expression on the event type; anchors are honoured', async () => {
      const got = await delivered({ events: 'confirmed' })
      expect(ids(got)).to.deep.equal(ids(log.filter((e) => e.type === 'message_confirmed')))
      const tx = await delivered({ events: '^transaction_submitted$' })
      expect(ids(tx)).to.deep.equal(ids(log.filter((e) => e.type === 'transaction_submitted')))
      expect(await delivered({ events: '^confirmed$' })).to.deep.equal([])
    })

    it('topic: the event topic', async () => {
      const got = await delivered({ topic: `A-${run}` })
      expect(refs(got)).to.deep.equal([a.header.id])
      expect(ids(got)).to.deep.equal(ids(where(new RegExp(`A-${run}`), (e) => e.topic ?? '')))
    })

    it('message.author: the author DID of the referred message', async () => {
      const got = await delivered({ message: { author: 'org1' } })
      expect(refs(got)).to.deep.equal([b.header.id])
      const org0s = await delivered({ message: { author: `^${org(0).did}$` } })
      expect(ids(org0s)).to.deep.equal(ids(where(new RegExp(`^${org(0).did}$`), (e) => e.message?.header.author ?? '')))
      expect(refs(org0s)).to.include.members([a.header.id, p.header.id])
      expect(refs(org0s)).not.to.include(b.header.id)
    })

    it('message.group: the group hash of a private message', async () => {
      const got = await delivered({ message: { group } })
      expect(refs(got)).to.include(p.header.id)
      expect(refs(got)).not.to.include(a.header.id)
      for (const e of got) expect(e.message?.header.group).to.equal(group)
      expect(ids(got)).to.deep.equal(ids(where(new RegExp(group), (e) => e.message?.header.group ?? '')))
    })

    it('message.tag: the tag of the referred message', async () => {
      expect(refs(await delivered({ message: { tag: 'lph' } }))).to.deep.equal([a.header.id])
      expect(refs(await delivered({ message: { tag: '^gamma$' } }))).to.deep.equal([p.header.id])
      expect(await delivered({ message: { tag: '^lph$' } })).to.deep.equal([])
    })

    it('message.topics: any of the topics of the referred message', async () => {
      expect(refs(await delivered({ message: { topics: `B-${run}` } }))).to.deep.equal([b.header.id])
      expect(refs(await delivered({ message: { topics: `^tP-${run}$` } }))).to.deep.equal([p.header.id])
    })

    it('transaction.type: transaction_submitted on the sender carries its transaction, type batch_pin', async () => {
      const got = await delivered({ transaction: { type: 'batch_pin' } })
      expect(got.length).to.be.greaterThan(0)
      expect(ids(got)).to.deep.equal(ids(log.filter((e) => e.type === 'transaction_submitted')))
      for (const e of got) {
        expect(e.type).to.equal('transaction_submitted')
        expect(e.transaction?.type).to.equal('batch_pin')
        expect(e.transaction?.id).to.equal(e.reference)
      }
      // A message event refers to no transaction object: the empty string, which `pin` does not match.
      expect(ids(await delivered({ transaction: { type: 'pin' } }))).to.deep.equal(ids(got))
    })

    it('all given expressions must match', async () => {
      const author = org(0).did
      const got = await delivered({ events: 'message_confirmed', message: { author, tag: 'a' } })
      const want = log.filter((e) => /message_confirmed/.test(e.type) && new RegExp(author).test(e.message?.header.author ?? '') && /a/.test(e.message?.header.tag ?? ''))
      expect(ids(got)).to.deep.equal(ids(want))
      expect(refs(got)).to.include.members([a.header.id, p.header.id])
      expect(refs(got), 'another author').not.to.include(b.header.id)
      expect(got.map((e) => e.type), 'only the type asked for').to.satisfy((types: string[]) => types.every((x) => x === 'message_confirmed'))
    })

    it('blockchainevent.name and blockchainevent.listener: BatchPin events in svc_system (REST filter and filter.blockchain.name on the socket)', async () => {
      const [org0, org1] = [org(0), org(1)]
      const sys = 'svc_system'
      const byName = await createSubscription(org1, sys, { name: `bc-name-${run}`, filter: { blockchainevent: { name: 'Pin' } } })
      const noName = await createSubscription(org1, sys, { name: `bc-noname-${run}`, filter: { blockchainevent: { name: '^Nope$' } } })
      const noListener = await createSubscription(org1, sys, { name: `bc-nolistener-${run}`, filter: { events: 'blockchain_event_received', blockchainevent: { listener: '^$' } } })
      const anyListener = await createSubscription(org1, sys, { name: `bc-listener-${run}`, filter: { blockchainevent: { listener: '.' } } })
      const sockets: Record<string, EventSocket> = {}
      for (const sub of [byName, noName, noListener, anyListener]) sockets[sub.name] = await EventSocket.open(rootWs(org1, `namespace=${sys}&name=${sub.name}`), { ack: true })
      const eph = await EventSocket.open(rootWs(org1, `namespace=${sys}&ephemeral&autoack&filter.blockchain.name=Pin`))
      await sleep(200)

      const m = await send(org0, `bc-${run}`, `bc-${run}`, 'pin me')
      const confirmed = await messageReaching(org1, `bc-${run}`, m.header.id, ['confirmed'])
      const named = sockets[byName.name]!
      await named.until('a blockchain_event_received for the broadcast', (s) => s.events.some((e) => e.tx === confirmed.txid), 60_000)
      const e = named.events.find((x) => x.tx === confirmed.txid)!
      expect(e.type).to.equal('blockchain_event_received')
      expect(e.namespace).to.equal(sys)
      expect(e.topic).to.equal('ff_batch_pin')
      expect(e.blockchainEvent, 'the event carries its blockchain event').to.be.an('object')
      expect(e.blockchainEvent!.id).to.equal(e.reference)
      for (const x of named.events) expect(x.type).to.equal('blockchain_event_received')
      await eph.eventFor(e.reference, 'blockchain_event_received')

      // Everything up to that event has passed the others: listener '^$' took the same events (a BatchPin log comes
      // from no listener, so its listener is the empty string); '^Nope$' and '.' took none.
      const S = e.sequence
      for (const sub of [noName, noListener, anyListener]) {
        const deadline = Date.now() + 30_000
        while ((await currentOffset(org1, sys, sub.name)) < S) {
          if (Date.now() > deadline) throw new Error(`${sub.name} never passed sequence ${S}`)
          await sleep(100)
        }
      }
      const upTo = (s: EventSocket): string[] => ids(s.events.filter((x) => x.sequence <= S))
      expect(upTo(sockets[noListener.name]!)).to.deep.equal(upTo(named))
      expect(sockets[noName.name]!.events, 'name ^Nope$').to.deep.equal([])
      expect(sockets[anyListener.name]!.events, 'listener .').to.deep.equal([])
    })

    it('a bad expression is 400 on the REST call (not created) and a protocol_error on the socket', async () => {
      const m = org(0)
      for (const filter of [{ events: '(' }, { topic: '[a-' }, { message: { tag: '(?=lookahead)' } }, { message: { author: '(a)\\1' } }, { transaction: { type: '*' } }]) {
        const name = `bad${n++}`
        const r = await request<{ error?: string }>('POST', subsUrl(m, ns), { name, filter })
        expect(r.status, `${JSON.stringify(filter)}: ${JSON.stringify(r.body)}`).to.equal(400)
        expect(r.body.error, 'an error body').to.be.a('string')
        expect((await get(`${subsUrl(m, ns)}/${name}`)).status, 'not created').to.equal(404)
        const put = await request('PUT', subsUrl(m, ns), { name, filter })
        expect(put.status, `PUT ${JSON.stringify(filter)}`).to.equal(400)
      }
      const byQuery = await EventSocket.open(rootWs(m, `namespace=${ns}&ephemeral&autoack&filter.events=${encodeURIComponent('(')}`))
      const q = await byQuery.protocolError()
      expect(q.code).to.equal(1008)
      expect(q.error).to.be.a('string').and.not.equal('')
      const byStart = await EventSocket.open(rootWs(m, ''))
      byStart.send({ type: 'start', namespace: ns, ephemeral: true, autoack: true, filter: { message: { tag: '(?=x)' } } })
      expect((await byStart.protocolError()).code).to.equal(1008)
    })
  })

  describe('protocol errors', () => {
    it('a malformed frame gets protocol_error and a closed socket (1008); so do an unknown type and other invalid frames', async () => {
      const m = org(1)
      const ns = `proto-${run}`
      const cases: { what: string; path: string; frame: unknown }[] = [
        { what: 'not JSON', path: rootWs(m, ''), frame: '{"type": "start", ' },
        { what: 'not an object', path: rootWs(m, ''), frame: '[1, 2, 3]' },
        { what: 'unknown type', path: rootWs(m, ''), frame: { type: 'subscribe', namespace: ns } },
        { what: 'start without a namespace on /ws', path: rootWs(m, ''), frame: { type: 'start', ephemeral: true } },
        { what: 'start with neither a name nor ephemeral', path: rootWs(m, ''), frame: { type: 'start', namespace: ns } },
        { what: 'a start for another namespace on a namespaced socket', path: nsWs(m, ns, ''), frame: { type: 'start', namespace: `other-${run}`, ephemeral: true } },
        { what: 'an ack of nothing in flight', path: rootWs(m, `namespace=${ns}&ephemeral`), frame: { type: 'ack', id: '7f0c7a86-5c54-4d0e-9b1e-2a0c1b9f1d11' } },
      ]
      for (const c of cases) {
        const s = await EventSocket.open(c.path)
        s.send(c.frame)
        const { error, code } = await s.protocolError()
        expect(code, c.what).to.equal(1008)
        expect(error, c.what).to.be.a('string').and.not.equal('')
      }
      // The node is fine afterwards: a new listener works.
      const ok = await EventSocket.open(rootWs(m, `namespace=${ns}&ephemeral&autoack`))
      const msg = await send(org(0), ns, `p-${run}`, 'still here')
      await ok.eventFor(msg.header.id)
    })

    it('an ack on an autoack connection gets protocol_error and a closed socket', async () => {
      const [org0, org1] = [org(0), org(1)]
      const ns = `autoack-${run}`
      const s = await EventSocket.open(rootWs(org1, `namespace=${ns}&ephemeral&autoack`))
      const msg = await send(org0, ns, `aa-${run}`, 'x')
      const e = await s.eventFor(msg.header.id)
      s.sendAck(e.id, e.subscription)
      const { code } = await s.protocolError()
      expect(code).to.equal(1008)
    })

    it('the server answers pings (the SDK reconnects when it does not)', async () => {
      const s = await EventSocket.open(rootWs(org(2), 'namespace=default&ephemeral&autoack'))
      const pong = new Promise<string>((resolve) => s.ws.once('pong', (d: Buffer) => resolve(d.toString())))
      s.ws.ping('are you there')
      expect(await pong).to.equal('are you there')
    })

    it('an upgrade on any other path is refused with 404', async () => {
      let status: number | undefined
      try {
        await EventSocket.open(`${wsBase(org(0))}/api/v1/namespaces/default/nope/ws`)
      } catch (err) {
        status = (err as { status?: number }).status
      }
      expect(status).to.equal(404)
    })
  })

  describe('subscriptions over REST', () => {
    it('POST 201, a duplicate name 409, GET the list and one (by id and by name), on the three path forms; DELETE 204 then 404', async () => {
      const m = org(2)
      const ns = `rest-${run}`
      const prefixed = `${m.api}/api/v1/namespaces/${ns}/subscriptions`
      const unprefixed = `${m.api}/namespaces/${ns}/subscriptions`
      const dflt = `${m.api}/api/v1/subscriptions`

      const body = { name: 'one', transport: 'websockets', filter: { events: 'message_confirmed', message: { tag: 'x' } }, options: { firstEvent: 'oldest', readAhead: 50 } }
      const r = await request<ApiSubscription>('POST', prefixed, body)
      expect(r.status, JSON.stringify(r.body)).to.equal(201)
      const one = r.body
      expect(one.id).to.match(UUID_RE)
      expect(one.namespace).to.equal(ns)
      expect(one.name).to.equal('one')
      expect(one.transport).to.equal('websockets')
      expect(one.filter.events).to.equal('message_confirmed')
      expect((one.filter.message as { tag?: string }).tag).to.equal('x')
      expect(one.options.firstEvent).to.equal('-1')
      expect(one.options.readAhead).to.equal(50)
      expect(one.created).to.be.a('string')

      const dup = await request<{ error?: string }>('POST', prefixed, { name: 'one' })
      expect(dup.status).to.equal(409)
      expect(dup.body.error).to.be.a('string')
      // The unprefixed form (the spec's), the same namespace: also a duplicate there.
      expect((await request('POST', unprefixed, { name: 'one' })).status).to.equal(409)
      const two = await request<ApiSubscription>('POST', unprefixed, { name: 'two' })
      expect(two.status, JSON.stringify(two.body)).to.equal(201)
      expect(two.body.namespace).to.equal(ns)
      expect(two.body.transport, 'websockets by default').to.equal('websockets')
      expect((await request('POST', prefixed, { filter: {} })).status, 'no name').to.equal(400)
      for (const options of [{ firstEvent: 'bogus' }, { firstEvent: '-2' }, { readAhead: -1 }, { readAhead: 'ten' }, { withData: true }]) {
        const bad = await request<{ error?: string }>('POST', prefixed, { name: 'bad-options', options })
        expect(bad.status, `${JSON.stringify(options)}: ${JSON.stringify(bad.body)}`).to.equal(400)
      }
      expect((await request('POST', prefixed, { name: 'bad-transport', transport: 'webhooks' })).status, 'websockets only').to.equal(400)

      for (const base of [prefixed, unprefixed]) {
        const list = await get<ApiSubscription[]>(base)
        expect(list.status).to.equal(200)
        expect(list.body.map((s) => s.name).sort()).to.deep.equal(['one', 'two'])
        const filtered = await get<ApiSubscription[]>(`${base}?name=two`)
        expect(filtered.body.map((s) => s.id)).to.deep.equal([two.body.id])
        for (const key of [one.id, 'one']) {
          const g = await get<ApiSubscription>(`${base}/${key}`)
          expect(g.status, `${base}/${key}`).to.equal(200)
          expect(g.body.id).to.equal(one.id)
          expect(g.body.name).to.equal('one')
          expect(g.body, 'no status without fetchstatus').not.to.have.property('status')
        }
        const st = await get<ApiSubscription>(`${base}/one?fetchstatus=true`)
        expect(st.body.status?.currentOffset, 'fetchstatus gives the offset (oldest: before everything)').to.be.a('number')
      }
      expect((await get(`${prefixed}/nope`)).status).to.equal(404)
      expect((await get(`${prefixed}/7f0c7a86-5c54-4d0e-9b1e-2a0c1b9f1d11`)).status).to.equal(404)

      // /api/v1/subscriptions is the default namespace.
      const name = `d-${run}`
      const d = await request<ApiSubscription>('POST', dflt, { name })
      expect(d.status, JSON.stringify(d.body)).to.equal(201)
      expect(d.body.namespace).to.equal('default')
      expect((await get<ApiSubscription>(`${m.api}/api/v1/namespaces/default/subscriptions/${name}`)).body.id).to.equal(d.body.id)
      expect((await get<ApiSubscription[]>(dflt)).body.map((s) => s.name)).to.include(name)
      expect((await get(`${prefixed}/${name}`)).status, 'not in another namespace').to.equal(404)

      // DELETE on each form: 204, then 404 for GET and DELETE.
      for (const [base, sub] of [
        [prefixed, one.id],
        [unprefixed, 'two'],
        [dflt, d.body.id],
      ] as const) {
        const del = await request('DELETE', `${base}/${sub}`)
        expect(del.status, `DELETE ${base}/${sub}`).to.equal(204)
        expect((await get(`${base}/${sub}`)).status).to.equal(404)
        expect((await request('DELETE', `${base}/${sub}`)).status).to.equal(404)
      }
      expect((await get<ApiSubscription[]>(prefixed)).body).to.deep.equal([])
      // The name is free again.
      expect((await request('POST', prefixed, { name: 'one' })).status).to.equal(201)
    })

    it('a durable subscription deleted while a client is connected delivers nothing more', async () => {
      const [org0, org1] = [org(0), org(1)]
      const ns = `del-${run}`
      const sub = await createSubscription(org1, ns, { name: 'gone' })
      const s = await EventSocket.open(rootWs(org1, `namespace=${ns}&name=gone`), { ack: true })
      const m1 = await send(org0, ns, `g-${run}`, 1)
      await s.eventFor(m1.header.id)
      expect((await request('DELETE', `${subsUrl(org1, ns)}/${sub.id}`)).status).to.equal(204)
      const m2 = await send(org0, ns, `g-${run}`, 2)
      await waitConfirmedAll(org1, ns, [m2.header.id])
      await sleep(QUIET_MS)
      expect(refs(s.events)).to.deep.equal([m1.header.id])
    })
  })
})
