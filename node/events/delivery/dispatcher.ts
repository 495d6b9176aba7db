import { clientJson, type GoJsonValue } from '../../core/json.js'
import { newId, type Uuid } from '../../core/ids.js'
import { errorMessage } from '../../core/errors.js'
import type { EnrichedEvent, SubscriptionRef } from '../../model/index.js'
import type { EventEnricher, EventPageStream, EventRenderer, EventStreams } from '../types.js'
import type { EventMatcher } from '../filter.js'
import { OffsetTracker } from './offset-tracker.js'
import { EventQueue } from './event-queue.js'

/** Decides whether an enriched event goes to a subscription (`events/filter.ts` makes them). */
export type { EventMatcher }

/**
 * One receiver of a subscription's events: a WebSocket connection that started it. A durable subscription may have
 * several; each event goes to exactly one of them at a time.
 */
export interface Consumer {
  /** For logs. */
  readonly id: string
  /** Events are settled once written to it; acknowledgements from it are a protocol error. */
  readonly autoack: boolean
  /** Whether it can take a frame now: false while what it was sent has not left the process (a slow reader). */
  ready(): boolean
  /** Sends one frame (JSON text). */
  send(frame: string): void
  /** Delivery cannot go on (the log could not be read): the consumer should end, so that its client reconnects. */
  abort(reason: string): void
}

export interface DeliveryShape {
  /** Events sent beyond the first before an acknowledgement is needed (N allows N+1 unacknowledged). */
  readAhead: number
  /** Batch mode: `event_batch` frames of up to `size` events, sent when full or `timeoutMs` after the first is ready. */
  batch?: { size: number; timeoutMs: number }
}

export interface DispatcherOptions extends DeliveryShape {
  ref: SubscriptionRef
  /** Deliver events with a sequence above this. */
  after: number
  matcher: EventMatcher
  streams: EventStreams
  enrich: EventEnricher
  render: EventRenderer
  /** Called whenever the offset moves (a durable subscription stores it); never awaited. */
  offsetMoved?: (offset: number) => void
  /** The stream failed (the database closed under it): the dispatcher has stopped and aborted its consumers. */
  failed?: (err: unknown) => void
  log: (line: string) => void
}

/** What an acknowledgement did. */
export type AckOutcome = 'acked' | 'unknown'

interface Sent {
  consumer: Consumer
  events: EnrichedEvent[]
}

/**
 * Delivers one subscription's events in sequence order to its consumers (FireFly's `eventDispatcher`): it reads the
 * log a page at a time (woken on insert, never polling), enriches each page with one query per kind of object,
 * filters, and hands events to a ready consumer while fewer than readAhead+1 are unacknowledged. The offset advances
 * over contiguously settled events only, so whatever was sent and not acknowledged is delivered again: to another
 * consumer when its consumer leaves, or after a restart from the stored offset. It holds at most one batch (or one
 * event) plus one page of read events, its unacknowledged events and what a departed consumer left: a subscriber
 * that stops acknowledging stops the reading.
 */
export class Dispatcher {
  private readonly tracker: OffsetTracker
  private readonly stream: EventPageStream
  /** Read, matched, not yet sent, in sequence order. */
  private readonly queue = new EventQueue()
  /** Sent to a consumer that left before acknowledging them: sent again before anything newer, lowest first. */
  private redeliver = new EventQueue()
  /** Unacknowledged frames by the id they are acknowledged with (the event id, or the batch id). */
  private readonly sent = new Map<string, Sent>()
  private unacked = 0
  private readonly consumers: Consumer[] = []
  private turn = 0
  private matcher: EventMatcher
  private shape: DeliveryShape
  private stopped = false
  private wake: (() => void) | undefined
  private readerWake: (() => void) | undefined
  private batchDeadline: number | undefined
  private batchTimer: NodeJS.Timeout | undefined

  constructor(private readonly o: DispatcherOptions) {
    this.tracker = new OffsetTracker(o.after)
    this.matcher = o.matcher
    this.shape = { readAhead: o.readAhead, ...(o.batch ? { batch: o.batch } : {}) }
    this.stream = o.streams.stream({ namespace: o.ref.namespace, after: o.after })
    void this.read()
    void this.send()
  }

  get ref(): SubscriptionRef {
    return this.o.ref
  }

  /** Everything at or below it is acknowledged or filtered out. */
  get offset(): number {
    return this.tracker.offset
  }

  attach(c: Consumer): void {
    if (this.stopped || this.consumers.includes(c)) return
    this.consumers.push(c)
    this.kick()
  }

  /** The consumer left: what it was sent and did not acknowledge goes out again, first. */
  detach(c: Consumer): void {
    const i = this.consumers.indexOf(c)
    if (i < 0) return
    this.consumers.splice(i, 1)
    const back: EnrichedEvent[] = []
    for (const [id, s] of this.sent) {
      if (s.consumer !== c) continue
      this.sent.delete(id)
      this.unacked -= s.events.length
      back.push(...s.events)
    }
    if (back.length > 0) this.redeliver = EventQueue.merged(this.redeliver.drain(), back)
    this.kick()
  }

  /**
   * An acknowledgement from `c`: of the frame with that id (an event id, or a batch id in batch mode), or without
   * one of the oldest frame it was sent. 'unknown' when nothing sent to `c` and unacknowledged has that id.
   */
  ack(c: Consumer, id?: string): AckOutcome {
    let key: string | undefined = id
    if (key === undefined) {
      for (const [k, s] of this.sent) {
        if (s.consumer === c) {
          key = k
          break
        }
      }
    }
    const s = key === undefined ? undefined : this.sent.get(key)
    if (!s || s.consumer !== c) return 'unknown'
    this.sent.delete(key!)
    this.unacked -= s.events.length
    this.settle(s.events)
    this.kick()
    return 'acked'
  }

  /** A consumer that was not ready (its socket backed up) is again. */
  consumerReady(): void {
    this.kick()
  }

  /** Whether `c` has unacknowledged frames from this dispatcher (to route an ack that names no subscription). */
  holds(c: Consumer, id: string): boolean {
    return this.sent.get(id)?.consumer === c
  }

  /**
   * A replaced definition: the new filter applies to every event not yet sent (also those waiting to be sent
   * again), the new shape to the next frame.
   */
  reconfigure(matcher: EventMatcher, shape: DeliveryShape): void {
    this.matcher = matcher
    this.shape = { readAhead: shape.readAhead, ...(shape.batch ? { batch: shape.batch } : {}) }
    const dropped: EnrichedEvent[] = []
    for (const q of [this.queue, this.redeliver]) {
      const keep = q.drain().filter((e) => this.safeMatch(e) || (dropped.push(e), false))
      q.push(keep)
    }
    this.settle(dropped)
    this.kick()
  }

  /** Ends delivery; unacknowledged events stay above the offset, so they are delivered again by whoever resumes. */
  stop(): void {
    if (this.stopped) return
    this.stopped = true
    clearTimeout(this.batchTimer)
    void this.stream.return?.()
    this.sent.clear()
    this.queue.drain()
    this.redeliver.drain()
    this.consumers.length = 0
    this.kick()
  }

  private fail(err: unknown, what: string): void {
    if (this.stopped) return
    this.o.log(`events: subscription ${this.o.ref.namespace}/${this.o.ref.name} stopped: ${what}: ${errorMessage(err)}`)
    const consumers = [...this.consumers]
    this.stop()
    for (const c of consumers) c.abort(`delivery stopped: ${what}`)
    this.o.failed?.(err)
  }

  private settle(events: readonly EnrichedEvent[]): void {
    let moved = false
    for (const e of events) moved = this.tracker.settle(e.event.sequence) || moved
    if (moved) this.o.offsetMoved?.(this.tracker.offset)
  }

  /** Events the sender wants queued before it can send: a whole batch in batch mode, else one. */
  private wanted(): number {
    return this.shape.batch?.size ?? 1
  }

  private kick(): void {
    const w = this.wake
    this.wake = undefined
    w?.()
    const r = this.readerWake
    if (r && (this.stopped || this.queue.length < this.wanted())) {
      this.readerWake = undefined
      r()
    }
  }

  /**
   * Reads a page whenever fewer events are queued than the sender needs, so a pending batch fills from events that
   * arrive while it waits, and at most one page beyond that waits in memory whatever the consumers do.
   */
  private async read(): Promise<void> {
    try {
      while (!this.stopped) {
        if (this.queue.length >= this.wanted()) {
          await new Promise<void>((resolve) => (this.readerWake = resolve))
          continue
        }
        const page = await this.stream.nextPage()
        if (!page || this.stopped) return
        const enriched = this.o.enrich(page)
        let moved = false
        let matched = 0
        for (const e of enriched) {
          if (this.safeMatch(e)) {
            this.tracker.deliver(e.event.sequence)
            this.queue.push1(e)
            matched++
          } else moved = this.tracker.pass(e.event.sequence) || moved
        }
        if (moved) this.o.offsetMoved?.(this.tracker.offset)
        this.kick()
        // Long runs of filtered-out events yield now and then, so one subscription cannot hold the loop.
        if (matched === 0) await new Promise<void>((resolve) => setImmediate(resolve))
      }
    } catch (err) {
      this.fail(err, 'the event log could not be read')
    }
  }

  private safeMatch(e: EnrichedEvent): boolean {
    try {
      return this.matcher(e)
    } catch {
      return false
    }
  }

  private async send(): Promise<void> {
    while (!this.stopped) {
      let sent: boolean
      try {
        sent = this.sendOne()
      } catch (err) {
        this.fail(err, 'an event could not be sent')
        return
      }
      if (!sent) await new Promise<void>((resolve) => (this.wake = resolve))
    }
  }

  /** Sends one frame if it can; false when it must wait for an ack, a ready consumer, events or the batch timer. */
  private sendOne(): boolean {
    const available = this.redeliver.length + this.queue.length
    if (available === 0) return false
    const batch = this.shape.batch
    const consumer = this.nextReady()
    if (!consumer) return false
    // Batch mode keeps one batch in flight (FireFly's); otherwise readAhead+1 events. What an autoack consumer is
    // sent is settled as it is sent, so only its socket's back-pressure (`ready()`) holds it back.
    if (!consumer.autoack && (batch ? this.unacked > 0 : this.unacked > this.shape.readAhead)) return false
    if (batch && available < batch.size) {
      const now = performance.now()
      this.batchDeadline ??= now + batch.timeoutMs
      if (now < this.batchDeadline) {
        clearTimeout(this.batchTimer)
        this.batchTimer = setTimeout(() => this.kick(), Math.ceil(this.batchDeadline - now))
        return false
      }
    }
    this.batchDeadline = undefined
    clearTimeout(this.batchTimer)
    const events = this.take(batch ? batch.size : 1)
    const id = batch ? newId<Uuid>() : events[0]!.event.id
    const frame = batch ? this.batchFrame(id, events) : this.eventFrame(events[0]!)
    if (consumer.autoack) {
      consumer.send(frame)
      this.settle(events)
      return true
    }
    this.unacked += events.length
    this.sent.set(id, { consumer, events })
    consumer.send(frame)
    return true
  }

  private take(n: number): EnrichedEvent[] {
    const out = this.redeliver.take(n)
    if (out.length < n) out.push(...this.queue.take(n - out.length))
    this.kick()
    return out
  }

  private nextReady(): Consumer | undefined {
    const n = this.consumers.length
    for (let k = 0; k < n; k++) {
      const c = this.consumers[(this.turn + k) % n]!
      if (c.ready()) {
        this.turn = (this.turn + k + 1) % n
        return c
      }
    }
    return undefined
  }

  private eventFrame(e: EnrichedEvent): string {
    try {
      return clientJson(withSubscription(this.o.render(e), this.o.ref)) + '\n'
    } catch (err) {
      return clientJson({ ...this.bare(e, err), subscription: this.o.ref }) + '\n'
    }
  }

  private batchFrame(id: string, events: EnrichedEvent[]): string {
    const frame = (render: (e: EnrichedEvent) => ReturnType<EventRenderer>): string =>
      clientJson({ type: 'event_batch', id, subscription: this.o.ref, events: events.map((e) => withSubscription(render(e), this.o.ref)) }) + '\n'
    try {
      return frame(this.o.render)
    } catch {
      // Find the events that do not encode, one by one, only on this rare path.
      return frame((e) => {
        try {
          const out = this.o.render(e)
          clientJson(out)
          return out
        } catch (err) {
          return this.bare(e, err)
        }
      })
    }
  }

  /**
   * An event whose referred object does not render (cannot be encoded) goes without it rather than wedging the
   * subscription on it; the application can still fetch the object by `reference`.
   */
  private bare(e: EnrichedEvent, err: unknown): ReturnType<EventRenderer> {
    this.o.log(`events: event ${e.event.id} (sequence ${e.event.sequence}) is delivered without its ${Object.keys(e.refs).join(', ') || 'object'}: ${errorMessage(err)}`)
    return this.o.render({ event: e.event, refs: {} })
  }
}

/** A rendered event (the renderer's own object) with the subscription it is delivered on. */
function withSubscription(out: ReturnType<EventRenderer>, ref: SubscriptionRef): ReturnType<EventRenderer> {
  out.subscription = ref as unknown as GoJsonValue
  return out
}
