import { expect } from 'chai'
import type { MemberDescription } from '../../network/description.js'
import { sharedNetwork } from '../support/shared-network.js'
import { messageReaching, nsBase, request, runId, send, waitConfirmedAll, type ApiMessage } from '../support/api.js'
import {
  EventSocket,
  closeEventSockets,
  createSubscription,
  currentOffset,
  eventLog,
  nsWs,
  rootWs,
  sleep,
  subscriptionStatus,
  waitOffset,
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
 * Events over WebSockets with real sockets on a real 3-member network, for what takes several members: events of
 * messages other members sent, rendered with their message; firstEvent against a node's real log; every filter key
 * on real events (authors, groups, transactions, BatchPin events). The socket protocol itself (acknowledgements,
 * readAhead, batches, durable subscriptions shared by connections, redelivery, protocol errors) is tested on the
 * transport and the dispatcher (test/unit/node/events/), the subscriptions' REST API on its routes.
 */
describe('events over WebSockets on a real 3-member network', function () {
  this.timeout(180_000)
  const t = sharedNetwork()
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
  })

  describe('firstEvent', () => {
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
  })
})
