import type { SubscriptionId } from '../../core/ids.js'
import { errorMessage } from '../../core/errors.js'
import { Backoff, sleep } from '../../core/backoff.js'
import type { Subscription } from '../../model/index.js'
import type { Consumer, Dispatcher } from './dispatcher.js'

/** What the durable dispatchers need of the subscriptions' owner (`SubscriptionManager` fits). */
export interface SubscriptionDirectory {
  byName(namespace: string, name: string): Subscription | undefined
  /** The stored offset. */
  currentOffset(id: SubscriptionId): number
  onChange(listener: (c: { kind: 'upsert' | 'delete'; subscription: Subscription }) => void): () => void
}

export interface DurableDispatchersOptions {
  directory: SubscriptionDirectory
  /** Starts delivering `sub` after `offset`, calling `offsetMoved` as acknowledgements move it. */
  start(sub: Subscription, offset: number, offsetMoved: (offset: number) => void, failed: () => void): Dispatcher
  /** Applies a replaced definition to a running dispatcher. */
  reconfigure(dispatcher: Dispatcher, sub: Subscription): void
  /** Stores an offset; resolves once it is durable, false when the subscription no longer exists. */
  saveOffset(id: SubscriptionId, offset: number): Promise<boolean>
  log: (line: string) => void
}

/** A consumer's place on a durable subscription, whether or not it exists yet. */
export interface DurableAttachment {
  /** The running dispatcher, while the subscription exists and has consumers. */
  dispatcher(): Dispatcher | undefined
  detach(): void
}

interface Entry {
  consumers: Set<Consumer>
  running?: { sub: Subscription; dispatcher: Dispatcher }
}

/**
 * The dispatchers of durable subscriptions, one per subscription while at least one connection has started it, shared
 * by all of them. A start names a subscription that may not exist yet (FireFly registers a matcher by name): nothing
 * is delivered until it is created. A replaced definition applies in place; a deleted one stops its dispatcher and
 * its connections wait for a new one of that name. Offsets are written as they move, coalesced: at most one write per
 * subscription in flight, the latest value next.
 */
export class DurableDispatchers {
  private readonly entries = new Map<string, Entry>()
  /**
   * One writer per subscription, kept while it has a write pending even after its dispatcher stopped: a dispatcher
   * started again meanwhile resumes from the offset being written, not from the older one in the table.
   */
  private readonly writers = new Map<SubscriptionId, OffsetWriter>()
  private readonly unlisten: () => void
  private stopped = false

  constructor(private readonly o: DurableDispatchersOptions) {
    this.unlisten = o.directory.onChange((c) => this.changed(c.kind, c.subscription))
  }

  attach(namespace: string, name: string, consumer: Consumer): DurableAttachment {
    const key = keyOf(namespace, name)
    let entry = this.entries.get(key)
    if (!entry) {
      entry = { consumers: new Set() }
      this.entries.set(key, entry)
    }
    entry.consumers.add(consumer)
    if (!entry.running) {
      const sub = this.o.directory.byName(namespace, name)
      try {
        if (sub) this.run(entry, sub)
      } catch (err) {
        // The caller records no attachment, so nothing would ever detach this consumer: without this it would stay
        // in the entry and be handed to the dispatcher a later definition starts, which then never stops.
        this.detach(entry, key, consumer)
        throw err
      }
    }
    entry.running?.dispatcher.attach(consumer)
    const held = entry
    return {
      dispatcher: () => held.running?.dispatcher,
      detach: () => this.detach(held, key, consumer),
    }
  }

  /** The offset last made durable for a running or recently run subscription; undefined: read the table. */
  durableOffset(id: SubscriptionId): number | undefined {
    return this.writers.get(id)?.durable
  }

  /** Stops every dispatcher and waits for the offsets they reached to be written. */
  async stop(): Promise<void> {
    this.stopped = true
    this.unlisten()
    for (const entry of this.entries.values()) if (entry.running) this.halt(entry)
    this.entries.clear()
    await Promise.all([...this.writers.values()].map((w) => w.stop()))
  }

  private detach(entry: Entry, key: string, consumer: Consumer): void {
    if (!entry.consumers.delete(consumer)) return
    entry.running?.dispatcher.detach(consumer)
    if (entry.consumers.size > 0) return
    if (entry.running) this.halt(entry)
    if (this.entries.get(key) === entry) this.entries.delete(key)
  }

  private changed(kind: 'upsert' | 'delete', sub: Subscription): void {
    if (this.stopped) return
    if (kind === 'delete') this.forget(sub.id)
    const entry = this.entries.get(keyOf(sub.namespace, sub.name))
    if (!entry) return
    if (kind === 'delete') {
      if (entry.running?.sub.id === sub.id) this.halt(entry)
      return
    }
    if (entry.running && entry.running.sub.id === sub.id) {
      entry.running.sub = sub
      this.o.reconfigure(entry.running.dispatcher, sub)
      return
    }
    if (entry.running) this.halt(entry)
    this.run(entry, sub)
  }

  /** Starts delivering `sub` to the entry's consumers; throws, holding nothing new, when the dispatcher cannot start. */
  private run(entry: Entry, sub: Subscription): void {
    const existing = this.writers.get(sub.id)
    const w = existing ?? new OffsetWriter(sub.id, this.o.saveOffset, this.o.log)
    if (!existing) this.writers.set(sub.id, w)
    let dispatcher: Dispatcher
    try {
      const stored = this.o.directory.currentOffset(sub.id)
      dispatcher = this.o.start(
        sub,
        Math.max(stored, w.latest ?? stored),
        (offset) => w.write(offset),
        () => {
          // The log could not be read (the database closing): the dispatcher closed its connections, whose clients
          // reconnect to a fresh one.
          if (entry.running?.dispatcher === dispatcher) this.halt(entry)
        },
      )
    } catch (err) {
      // A writer made for this start has written nothing; one that was there already is another run's to keep.
      if (!existing) this.writers.delete(sub.id)
      throw err
    }
    entry.running = { sub, dispatcher }
    for (const c of entry.consumers) dispatcher.attach(c)
  }

  private halt(entry: Entry): void {
    const running = entry.running
    if (!running) return
    entry.running = undefined
    running.dispatcher.stop()
    const w = this.writers.get(running.sub.id)
    // Dropped once idle unless a dispatcher for it is running again by then.
    void w?.flushed().then(() => {
      if (this.writers.get(running.sub.id) === w && !w.busy && !this.isRunning(running.sub.id)) this.writers.delete(running.sub.id)
    })
  }

  private isRunning(id: SubscriptionId): boolean {
    for (const e of this.entries.values()) if (e.running?.sub.id === id) return true
    return false
  }

  /** A deleted subscription: nothing more is written for it. */
  private forget(id: SubscriptionId): void {
    const w = this.writers.get(id)
    this.writers.delete(id)
    void w?.stop()
  }
}

function keyOf(namespace: string, name: string): string {
  return `${namespace}\u0000${name}`
}

/**
 * Writes one subscription's offset as it moves: one write in flight, then the latest value, never an older one.
 * A failed write is retried with a growing pause until it succeeds or the writer stops.
 */
class OffsetWriter {
  /** The newest offset asked for, once asked; what a restarted dispatcher resumes from. */
  latest: number | undefined
  /** The newest offset known durable. */
  durable: number | undefined
  private pending: number | undefined
  private writing: Promise<void> | undefined
  private readonly stopping = new AbortController()
  private readonly backoff = new Backoff(200, 5_000)

  constructor(
    private readonly id: SubscriptionId,
    private readonly save: (id: SubscriptionId, offset: number) => Promise<boolean>,
    private readonly log: (line: string) => void,
  ) {}

  get busy(): boolean {
    return this.writing !== undefined
  }

  write(offset: number): void {
    if (this.stopping.signal.aborted) return
    this.latest = offset
    this.pending = offset
    this.writing ??= this.drain().finally(() => (this.writing = undefined))
  }

  /** Resolves once no write is pending. */
  async flushed(): Promise<void> {
    while (this.writing) await this.writing
  }

  /** Makes one last attempt at what is pending (no more pauses), then writes nothing more. */
  async stop(): Promise<void> {
    this.stopping.abort()
    await this.flushed()
    if (this.pending !== undefined) this.log(`events: subscription ${this.id}: offset ${this.pending} was not stored; its events after ${this.durable ?? 'the stored offset'} will be delivered again`)
  }

  private async drain(): Promise<void> {
    while (this.pending !== undefined) {
      const offset = this.pending
      this.pending = undefined
      try {
        // False: the subscription is gone; nothing to keep.
        if (await this.save(this.id, offset)) this.durable = offset
        if (this.backoff.retrying) this.log(`events: subscription ${this.id}: offsets are stored again`)
        this.backoff.reset()
      } catch (err) {
        if (this.backoff.failed(errorMessage(err))) this.log(`events: could not store the offset of subscription ${this.id}: ${errorMessage(err)}; retrying`)
        this.pending ??= offset
        if (this.stopping.signal.aborted) return
        await sleep(this.backoff.next(), this.stopping.signal)
      }
    }
  }
}
