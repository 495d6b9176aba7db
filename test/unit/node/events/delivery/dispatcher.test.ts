import { expect } from 'chai'
import { newId, type EventId, type SubscriptionId } from '../../../../../node/core/ids.js'
import type { Timestamp } from '../../../../../node/core/time.js'
import { createEventStreams } from '../../../../../node/events/stream.js'
import type { EventStreams } from '../../../../../node/events/types.js'
import { Dispatcher, type Consumer, type EventMatcher } from '../../../../../node/events/delivery/dispatcher.js'
import { OffsetTracker } from '../../../../../node/events/delivery/offset-tracker.js'
import { DurableDispatchers } from '../../../../../node/events/delivery/durable.js'
import { deliveryShape, startOffset } from '../../../../../node/events/delivery/shape.js'
import { ParleyError } from '../../../../../node/core/errors.js'
import type { EnrichedEvent, EventType, NodeEvent, Subscription } from '../../../../../node/model/index.js'

/** Lets every runnable callback and microtask run (woken streams read, dispatchers send). */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r))
}

/** A consumer that records frames; `full` makes it not ready (a client that stopped reading). */
class Recorder implements Consumer {
  readonly id = newId()
  frames: { [k: string]: unknown }[] = []
  full = false
  constructor(readonly autoack = false) {}
  ready(): boolean {
    return !this.full
  }
  aborted: string | undefined
  abort(reason: string): void {
    this.aborted = reason
  }
  send(frame: string): void {
    expect(frame.endsWith('\n')).to.equal(true)
    this.frames.push(JSON.parse(frame) as { [k: string]: unknown })
  }
  ids(): string[] {
    return this.frames.map((f) => f.id as string)
  }
  seqs(): number[] {
    return this.frames.map((f) => f.sequence as number)
  }
}

describe('event delivery', () => {
  describe('offset tracker', () => {
    it('moves only over contiguously settled events, whatever order acks come in', () => {
      const t = new OffsetTracker(10)
      for (const s of [11, 12, 13]) t.deliver(s)
      expect(t.settle(12)).to.equal(false)
      expect(t.offset).to.equal(10)
      expect(t.settle(11)).to.equal(true)
      expect(t.offset).to.equal(12)
      expect(t.settle(11)).to.equal(false)
      expect(t.settle(13)).to.equal(true)
      expect(t.offset).to.equal(13)
      expect(t.unsettled).to.equal(0)
    })

    it('passes filtered-out events at once when nothing is open, else behind the open ones', () => {
      const t = new OffsetTracker(0)
      expect(t.pass(1)).to.equal(true)
      expect(t.offset).to.equal(1)
      t.deliver(2)
      expect(t.pass(3)).to.equal(false)
      expect(t.offset).to.equal(1)
      t.settle(2)
      expect(t.offset).to.equal(3)
    })

    it('keeps its place over a long run of filtered-out events behind one unacknowledged', () => {
      const t = new OffsetTracker(0)
      t.deliver(1)
      for (let s = 2; s <= 100_000; s++) t.pass(s)
      t.deliver(100_001)
      for (let s = 100_002; s <= 100_010; s++) t.pass(s)
      t.settle(1)
      expect(t.offset).to.equal(100_000)
      t.settle(100_001)
      expect(t.offset).to.equal(100_010)
    })

    it('refuses sequences out of order', () => {
      const t = new OffsetTracker(5)
      expect(() => t.deliver(5)).to.throw(/sequence order/)
      t.deliver(7)
      expect(() => t.pass(6)).to.throw(/sequence order/)
    })
  })

  describe('durable dispatchers', () => {
    it('resume after the offset still being written when the last connection leaves and another comes at once', async () => {
      const log: NodeEvent[] = []
      const streams = createEventStreams((_ns, after, limit) => log.filter((e) => e.sequence > after).slice(0, limit), { durableThrough: 0 })
      const sub = { id: newId<SubscriptionId>(), namespace: 'default', name: 'quick', transport: 'websockets' as const, filter: {}, options: { readAhead: 4 }, created: '2026-11-23T00:00:00Z' as Timestamp }
      let stored = 0
      const releases: (() => void)[] = []
      const registry = new DurableDispatchers({
        directory: { byName: () => sub, currentOffset: () => stored, onChange: () => () => {} },
        start: (s, offset, offsetMoved, failed) =>
          new Dispatcher({ ref: { id: s.id, namespace: s.namespace, name: s.name }, after: offset, readAhead: 4, matcher: () => true, streams, enrich: (p) => p.map((event) => ({ event, refs: {} })), render: (e) => ({ id: e.event.id, sequence: e.event.sequence }), offsetMoved, failed, log: () => {} }),
        reconfigure: () => {},
        // Writes are slow: each waits until the test lets it through.
        saveOffset: (_id, offset) => new Promise<boolean>((resolve) => releases.push(() => ((stored = offset), resolve(true)))),
        log: () => {},
      })
      const events = Array.from({ length: 5 }, (_, i): NodeEvent => ({ id: newId<EventId>(), sequence: i + 1, type: 'message_confirmed', namespace: 'default', reference: 'r', created: '2026-11-23T00:00:00Z' as Timestamp }))
      log.push(...events)
      streams.published(events)
      const a = new Recorder()
      const attachment = registry.attach('default', 'quick', a)
      await settle()
      for (const id of a.ids().slice(0, 3)) attachment.dispatcher()!.ack(a, id)
      attachment.detach()
      const b = new Recorder()
      registry.attach('default', 'quick', b)
      await settle()
      expect(b.seqs()).to.deep.equal([4, 5])
      for (const r of releases.splice(0)) r()
      await settle()
      for (const r of releases.splice(0)) r()
      await registry.stop()
      await streams.stop()
      expect(stored).to.equal(3)
    })
    it('a start that fails leaves nothing behind: a definition that fixes it later starts no dispatcher for that consumer', async () => {
      const log: NodeEvent[] = []
      const streams = createEventStreams((_ns, after, limit) => log.filter((e) => e.sequence > after).slice(0, limit), { durableThrough: 0 })
      // Stored before batchTimeout was checked at parse time: the shape cannot be read, so its dispatcher cannot start.
      let sub: Subscription = { id: newId<SubscriptionId>(), namespace: 'default', name: 'broken', transport: 'websockets', filter: {}, options: { batch: true, batchTimeout: '1e-7ms' }, created: '2026-11-23T00:00:00Z' as Timestamp }
      let listener: ((c: { kind: 'upsert' | 'delete'; subscription: Subscription }) => void) | undefined
      const started: Dispatcher[] = []
      const registry = new DurableDispatchers({
        directory: { byName: () => sub, currentOffset: () => 0, onChange: (l) => ((listener = l), () => {}) },
        start: (s, offset, offsetMoved, failed) => {
          const d = new Dispatcher({ ref: { id: s.id, namespace: s.namespace, name: s.name }, after: offset, ...deliveryShape(s.options), matcher: () => true, streams, enrich: (p) => p.map((event) => ({ event, refs: {} })), render: (e) => ({ id: e.event.id, sequence: e.event.sequence }), offsetMoved, failed, log: () => {} })
          started.push(d)
          return d
        },
        reconfigure: () => {},
        saveOffset: async () => true,
        log: () => {},
      })
      const a = new Recorder()
      expect(() => registry.attach('default', 'broken', a)).to.throw(ParleyError, /options\.batchTimeout must be a duration/)
      // The PUT that fixes it: nobody is attached, so nothing starts and nothing is sent to the consumer that failed.
      sub = { ...sub, options: { batch: true, batchTimeout: '0ms' } }
      listener!({ kind: 'upsert', subscription: sub })
      const event: NodeEvent = { id: newId<EventId>(), sequence: 1, type: 'message_confirmed', namespace: 'default', reference: 'r', created: '2026-11-23T00:00:00Z' as Timestamp }
      log.push(event)
      streams.published([event])
      await settle()
      expect(started).to.have.length(0)
      expect(a.frames).to.deep.equal([])
      // A consumer that comes now is served by a dispatcher started for it alone.
      const b = new Recorder()
      registry.attach('default', 'broken', b)
      await new Promise((r) => setTimeout(r, 10))
      expect(started).to.have.length(1)
      expect(b.frames.map((f) => f.type)).to.deep.equal(['event_batch'])
      expect(a.frames).to.deep.equal([])
      await registry.stop()
      await streams.stop()
    })
  })

  describe('shape and start offset', () => {
    it('defaults readAhead to 0, and batches to 50 events within 50 ms', () => {
      expect(deliveryShape({})).to.deep.equal({ readAhead: 0 })
      expect(deliveryShape({ readAhead: 5 })).to.deep.equal({ readAhead: 5 })
      expect(deliveryShape({ batch: true })).to.deep.equal({ readAhead: 49, batch: { size: 50, timeoutMs: 50 } })
      expect(deliveryShape({ batch: true, readAhead: 3, batchTimeout: '1.5s' })).to.deep.equal({ readAhead: 2, batch: { size: 3, timeoutMs: 1500 } })
    })

    it('starts oldest at 0, newest at the last sequence', () => {
      expect(startOffset('oldest', 40)).to.equal(0)
      expect(startOffset('-1', 40)).to.equal(0)
      expect(startOffset('newest', 40)).to.equal(40)
      expect(startOffset(undefined, 40)).to.equal(40)
    })
  })

  describe('dispatcher', () => {
    let log: NodeEvent[]
    let streams: EventStreams
    let dispatchers: Dispatcher[]
    let enrichedPages: number

    const NS = 'default'
    const ref = { id: newId<SubscriptionId>(), namespace: NS, name: 'sub' }

    function publish(n: number, type: EventType = 'message_confirmed', topic?: string): NodeEvent[] {
      const out: NodeEvent[] = []
      for (let i = 0; i < n; i++) {
        const e: NodeEvent = {
          id: newId<EventId>(),
          sequence: log.length + 1,
          type,
          namespace: NS,
          reference: newId(),
          ...(topic ? { topic } : {}),
          created: '2026-11-23T00:00:00Z' as Timestamp,
        }
        log.push(e)
        out.push(e)
      }
      streams.published(out)
      return out
    }

    function dispatcher(o: { after?: number; readAhead?: number; batch?: { size: number; timeoutMs: number }; matcher?: EventMatcher; moved?: number[] } = {}): Dispatcher {
      const d = new Dispatcher({
        ref,
        after: o.after ?? 0,
        readAhead: o.readAhead ?? 0,
        ...(o.batch ? { batch: o.batch } : {}),
        matcher: o.matcher ?? (() => true),
        streams,
        enrich: (page) => {
          enrichedPages++
          return page.map((event): EnrichedEvent => ({ event, refs: {} }))
        },
        render: (e) => ({ id: e.event.id, sequence: e.event.sequence, type: e.event.type }),
        offsetMoved: (n) => o.moved?.push(n),
        log: () => {},
      })
      dispatchers.push(d)
      return d
    }

    /** Consumer `a` attached and sent one event; `b` never attached. */
    async function oneSentToA(): Promise<{ a: Recorder; b: Recorder; d: Dispatcher }> {
      const a = new Recorder()
      const b = new Recorder()
      const d = dispatcher({ readAhead: 5 })
      d.attach(a)
      publish(1)
      await settle()
      return { a, b, d }
    }

    beforeEach(() => {
      log = []
      enrichedPages = 0
      dispatchers = []
      streams = createEventStreams((ns, after, limit) => log.filter((e) => e.namespace === ns && e.sequence > after).slice(0, limit), { durableThrough: 0 })
    })
    afterEach(async () => {
      for (const d of dispatchers) d.stop()
      await streams.stop()
    })

    it('sends one event at a time with readAhead 0 and the next only on its ack', async () => {
      const c = new Recorder()
      const moved: number[] = []
      const d = dispatcher({ moved })
      d.attach(c)
      publish(3)
      await settle()
      expect(c.seqs()).to.deep.equal([1])
      expect(d.ack(c, c.ids()[0])).to.equal('acked')
      await settle()
      expect(c.seqs()).to.deep.equal([1, 2])
      expect(moved).to.deep.equal([1])
      expect(d.ack(c)).to.equal('acked')
      await settle()
      expect(c.seqs()).to.deep.equal([1, 2, 3])
      expect(d.offset).to.equal(2)
      expect(c.frames[0]!.subscription).to.deep.equal(ref)
    })

    it('keeps readAhead+1 unacknowledged, and moves the offset only over contiguous acks', async () => {
      const c = new Recorder()
      const d = dispatcher({ readAhead: 2 })
      d.attach(c)
      publish(10)
      await settle()
      expect(c.seqs()).to.deep.equal([1, 2, 3])
      d.ack(c, c.ids()[1])
      await settle()
      expect(c.seqs()).to.deep.equal([1, 2, 3, 4])
      expect(d.offset).to.equal(0)
      d.ack(c, c.ids()[0])
      expect(d.offset).to.equal(2)
    })

    it('refuses an ack for an id it did not send to that consumer', async () => {
      const { a, b, d } = await oneSentToA()
      expect(d.ack(b, a.ids()[0])).to.equal('unknown')
      expect(d.ack(a, 'nope')).to.equal('unknown')
      expect(d.ack(a, a.ids()[0])).to.equal('acked')
      expect(d.ack(a, a.ids()[0])).to.equal('unknown')
    })

    it('gives each event to exactly one of several consumers', async () => {
      const a = new Recorder()
      const b = new Recorder()
      const d = dispatcher({ readAhead: 9 })
      d.attach(a)
      d.attach(b)
      publish(500)
      for (let round = 0; round < 200 && a.frames.length + b.frames.length < 500; round++) {
        await settle()
        for (const c of [a, b]) for (const id of c.ids().slice(-10)) d.ack(c, id)
      }
      const all = [...a.seqs(), ...b.seqs()].sort((x, y) => x - y)
      expect(all).to.deep.equal(Array.from({ length: 500 }, (_, i) => i + 1))
      expect(a.frames.length).to.be.greaterThan(0)
      expect(b.frames.length).to.be.greaterThan(0)
      expect(d.offset).to.equal(500)
    })

    it('sends what a departed consumer left unacknowledged to another, before anything newer', async () => {
      const a = new Recorder()
      const b = new Recorder()
      const d = dispatcher({ readAhead: 2 })
      d.attach(a)
      publish(6)
      await settle()
      expect(a.seqs()).to.deep.equal([1, 2, 3])
      d.ack(a, a.ids()[1])
      d.attach(b)
      d.detach(a)
      await settle()
      expect(b.seqs()).to.deep.equal([1, 3, 4])
      d.ack(b, b.ids()[0])
      expect(d.offset).to.equal(2)
    })

    it('passes over filtered-out events, moving the offset without sending them', async () => {
      const c = new Recorder()
      const moved: number[] = []
      const d = dispatcher({ readAhead: 10, matcher: (e) => e.event.type === 'message_rejected', moved })
      d.attach(c)
      publish(3)
      publish(1, 'message_rejected')
      publish(2)
      await settle()
      expect(c.seqs()).to.deep.equal([4])
      expect(d.offset).to.equal(3)
      d.ack(c)
      expect(d.offset).to.equal(6)
      expect(moved.at(-1)).to.equal(6)
    })

    it('starts after the offset it is given', async () => {
      publish(5)
      const c = new Recorder(true)
      dispatcher({ after: 3 }).attach(c)
      await settle()
      expect(c.seqs()).to.deep.equal([4, 5])
    })

    it('settles what it sends to an autoack consumer, held back only by its readiness', async () => {
      const c = new Recorder(true)
      const d = dispatcher()
      d.attach(c)
      publish(5)
      await settle()
      expect(c.seqs()).to.deep.equal([1, 2, 3, 4, 5])
      expect(d.offset).to.equal(5)
      c.full = true
      publish(3)
      await settle()
      expect(c.frames).to.have.length(5)
      c.full = false
      d.consumerReady()
      await settle()
      expect(c.seqs()).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8])
    })

    it('holds at most one page of a log a stalled consumer is not reading', async () => {
      const c = new Recorder()
      const d = dispatcher({ readAhead: 0 })
      d.attach(c)
      publish(5_000)
      await settle()
      expect(c.frames).to.have.length(1)
      // One page read and enriched; the rest stays in the database until the consumer acknowledges.
      expect(enrichedPages).to.equal(1)
      d.stop()
    })

    it('in batch mode, sends event_batch frames acknowledged by batch id, one batch in flight', async () => {
      const c = new Recorder()
      const d = dispatcher({ batch: { size: 3, timeoutMs: 20 } })
      d.attach(c)
      publish(7)
      await settle()
      expect(c.frames).to.have.length(1)
      const first = c.frames[0]! as { type: string; id: string; events: { sequence: number }[]; subscription: unknown }
      expect(first.type).to.equal('event_batch')
      expect(first.subscription).to.deep.equal(ref)
      expect(first.events.map((e) => e.sequence)).to.deep.equal([1, 2, 3])
      expect(d.ack(c, first.id)).to.equal('acked')
      expect(d.offset).to.equal(3)
      await settle()
      d.ack(c, c.frames[1]!.id as string)
      // One event left: sent once the batch timeout passes without more.
      await new Promise((r) => setTimeout(r, 40))
      await settle()
      expect((c.frames[2]! as { events: unknown[] }).events).to.have.length(1)
    })

    it('in batch mode, fills a waiting batch from events that arrive before its timeout', async () => {
      const c = new Recorder()
      const d = dispatcher({ batch: { size: 5, timeoutMs: 10_000 } })
      d.attach(c)
      publish(2)
      await settle()
      expect(c.frames).to.have.length(0)
      publish(3)
      await settle()
      expect((c.frames[0]! as { events: { sequence: number }[] }).events.map((e) => e.sequence)).to.deep.equal([1, 2, 3, 4, 5])
      d.stop()
    })

    it('in batch mode, batches larger than a page of the log fill from the backlog at once', async () => {
      const c = new Recorder()
      const d = dispatcher({ batch: { size: 500, timeoutMs: 10_000 } })
      d.attach(c)
      publish(1_000)
      await settle()
      expect((c.frames[0]! as { events: unknown[] }).events).to.have.length(500)
      d.stop()
    })

    it('answers unknown to an ack without an id from a consumer it sent nothing, and ignores a consumer never attached leaving', async () => {
      const { a, b, d } = await oneSentToA()
      expect(d.ack(b)).to.equal('unknown')
      d.detach(b)
      expect(d.ack(a)).to.equal('acked')
      expect(d.offset).to.equal(1)
    })

    it('passes over an event its filter throws on, as one filtered out', async () => {
      const c = new Recorder()
      const moved: number[] = []
      const d = dispatcher({
        moved,
        matcher: (e) => {
          if (e.event.type === 'message_rejected') throw new Error('no such field')
          return true
        },
      })
      d.attach(c)
      publish(1, 'message_rejected')
      publish(1)
      await settle()
      expect(c.seqs()).to.deep.equal([2])
      d.ack(c)
      expect(moved.at(-1)).to.equal(2)
    })

    it('sends an event without its object when rendering it fails, and says so', async () => {
      const c = new Recorder(true)
      const lines: string[] = []
      const d = new Dispatcher({
        ref,
        after: 0,
        readAhead: 0,
        matcher: () => true,
        streams,
        enrich: (page) => page.map((event): EnrichedEvent => ({ event, refs: { message: { id: 'm' } } as unknown as EnrichedEvent['refs'] })),
        render: (e) => {
          if (Object.keys(e.refs).length > 0) throw new Error('the message row is malformed')
          return { id: e.event.id, sequence: e.event.sequence }
        },
        log: (l) => lines.push(l),
      })
      dispatchers.push(d)
      d.attach(c)
      const [e] = publish(1)
      await settle()
      expect(c.frames).to.deep.equal([{ id: e!.id, sequence: 1, subscription: ref }])
      expect(lines).to.deep.equal([`events: event ${e!.id} (sequence 1) is delivered without its message: the message row is malformed`])
    })

    it('stops and aborts its consumers when a frame cannot be sent, saying why', async () => {
      const c = new Recorder()
      c.send = () => {
        throw new Error('the socket is gone')
      }
      const lines: string[] = []
      const d = new Dispatcher({ ref, after: 0, readAhead: 0, matcher: () => true, streams, enrich: (p) => p.map((event) => ({ event, refs: {} })), render: (e) => ({ id: e.event.id }), log: (l) => lines.push(l) })
      dispatchers.push(d)
      d.attach(c)
      publish(1)
      await settle()
      expect(c.aborted).to.equal('delivery stopped: an event could not be sent')
      expect(lines).to.deep.equal([`events: subscription ${NS}/sub stopped: an event could not be sent: the socket is gone`])
    })

    it('aborts its consumers when the log cannot be read', async () => {
      const c = new Recorder()
      const failing = createEventStreams(() => {
        throw new Error('the database is closed')
      })
      const d = new Dispatcher({ ref, after: 0, readAhead: 0, matcher: () => true, streams: failing, enrich: () => [], render: () => ({}), log: () => {} })
      dispatchers.push(d)
      d.attach(c)
      failing.published([{ id: newId<EventId>(), sequence: 1, type: 'message_confirmed', namespace: NS, reference: 'x', created: '2026-11-23T00:00:00Z' as Timestamp }])
      await settle()
      expect(c.aborted).to.match(/could not be read/)
    })

    it('applies a replaced filter to events waiting to be sent again', async () => {
      const a = new Recorder()
      const b = new Recorder()
      const d = dispatcher({ readAhead: 3 })
      d.attach(a)
      publish(2)
      publish(2, 'message_rejected')
      await settle()
      expect(a.seqs()).to.deep.equal([1, 2, 3, 4])
      d.detach(a)
      d.reconfigure((e) => e.event.type === 'message_rejected', { readAhead: 3 })
      d.attach(b)
      await settle()
      expect(b.seqs()).to.deep.equal([3, 4])
      d.ack(b)
      d.ack(b)
      expect(d.offset).to.equal(4)
    })

    it('applies a replaced filter to events not yet sent', async () => {
      const c = new Recorder()
      const d = dispatcher({ readAhead: 0 })
      d.attach(c)
      publish(2)
      publish(2, 'message_rejected')
      await settle()
      d.reconfigure((e) => e.event.type === 'message_rejected', { readAhead: 5 })
      d.ack(c)
      await settle()
      expect(c.seqs()).to.deep.equal([1, 3, 4])
    })

    it('stops: nothing more is sent and the offset stays below what was unacknowledged', async () => {
      const c = new Recorder()
      const d = dispatcher({ readAhead: 3 })
      d.attach(c)
      publish(3)
      await settle()
      d.stop()
      publish(3)
      await settle()
      expect(c.frames).to.have.length(3)
      expect(d.offset).to.equal(0)
    })
  })
})
