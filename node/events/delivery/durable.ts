import type { SubscriptionId } from '../../core/ids.js'
import { errorMessage } from '../../core/errors.js'
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
  /** Stores an offset; resolves once it is durable. */
  saveOffset(id: SubscriptionId, offset: number): Promise<void>
  log: (line: string) => void
}

/** A consumer's place on a durable subscription, whether or not it exists yet. */
export interface DurableAttachment {
  /** The running dispatcher, while the subscription exists and has consumers. */
  dispatcher(): Dispatcher | undefined
  detach(): void
}

interface Entry {
  namespace: string
  name: string
  consumers: Set<Consumer>
  running?: { sub: Subscription; dispatcher: Dispatcher; writer: OffsetWriter }
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
  /** Offsets known durable, by subscription, for `?fetchstatus` (a read of the table may see a commit not yet synced). */
  private readonly durable = new Map<SubscriptionId, number>()
  private readonly writers = new Set<OffsetWriter>()
  private readonly unlisten: () => void
  private stopped = false

  constructor(private readonly o: DurableDispatchersOptions) {
    this.unlisten = o.directory.onChange((c) => this.changed(c.kind, c.subscription))
  }

  attach(namespace: string, name: string, consumer: Consumer): DurableAttachment {
    const key = keyOf(namespace, name)
    let entry = this.entries.get(key)
    if (!entry) {
      entry = { namespace, name, consumers: new Set() }
      this.entries.set(key, entry)
    }
    entry.consumers.add(consumer)
    if (!entry.running) {
      const sub = this.o.directory.byName(namespace, name)
      if (sub) this.run(entry, sub)
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
    return this.durable.get(id)
  }

  /** Stops every dispatcher and waits for the offsets they reached to be written. */
  async stop(): Promise<void> {
    this.stopped = true
    this.unlisten()
    for (const entry of this.entries.values()) if (entry.running) this.halt(entry)
    this.entries.clear()
    await Promise.all([...this.writers].map((w) => w.flushed()))
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
    const entry = this.entries.get(keyOf(sub.namespace, sub.name))
    if (!entry) {
      if (kind === 'delete') this.durable.delete(sub.id)
      return
    }
    if (kind === 'delete') {
      if (entry.running?.sub.id === sub.id) this.halt(entry)
      this.durable.delete(sub.id)
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

  private run(entry: Entry, sub: Subscription): void {
    const writer = new OffsetWriter(sub.id, this.o.saveOffset, this.durable, this.o.log)
    this.writers.add(writer)
    const dispatcher = this.o.start(
      sub,
      this.o.directory.currentOffset(sub.id),
      (offset) => writer.write(offset),
      () => {
        // The log could not be read (the database closing): its connections will find a fresh one on reconnect.
        if (entry.running?.dispatcher === dispatcher) this.halt(entry)
      },
    )
    entry.running = { sub, dispatcher, writer }
    for (const c of entry.consumers) dispatcher.attach(c)
  }

  private halt(entry: Entry): void {
    const running = entry.running
    if (!running) return
    entry.running = undefined
    running.dispatcher.stop()
    void running.writer.flushed().then(() => this.writers.delete(running.writer))
  }
}

function keyOf(namespace: string, name: string): string {
  return `${namespace}\u0000${name}`
}

/** Writes one subscription's offset as it moves: one write in flight, then the latest value, never an older one. */
class OffsetWriter {
  private latest: number | undefined
  private writing: Promise<void> | undefined
  private failures = 0

  constructor(
    private readonly id: SubscriptionId,
    private readonly save: (id: SubscriptionId, offset: number) => Promise<void>,
    private readonly durable: Map<SubscriptionId, number>,
    private readonly log: (line: string) => void,
  ) {}

  write(offset: number): void {
    this.latest = offset
    this.writing ??= this.drain().finally(() => (this.writing = undefined))
  }

  /** Resolves once no write is pending. */
  async flushed(): Promise<void> {
    while (this.writing) await this.writing
  }

  private async drain(): Promise<void> {
    while (this.latest !== undefined) {
      const offset = this.latest
      this.latest = undefined
      try {
        await this.save(this.id, offset)
        this.durable.set(this.id, offset)
        this.failures = 0
      } catch (err) {
        // Never lost: a later move writes a newer value; until one comes, retry this one after a pause.
        if (this.failures++ === 0) this.log(`events: could not store the offset of subscription ${this.id}: ${errorMessage(err)}; retrying`)
        this.latest ??= offset
        if (this.failures > 20) return
        await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 100 * this.failures)))
      }
    }
  }
}
