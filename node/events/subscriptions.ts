import { ParleyError, errorMessage } from '../core/errors.js'
import { isUuid, newId, type SubscriptionId } from '../core/ids.js'
import { now } from '../core/time.js'
import type { Database } from '../db/database.js'
import type { SubscriptionsRepo } from '../db/repos/subscriptions.js'
import type { CollectionQuery, Subscription, SubscriptionOptions } from '../model/index.js'
import { parseSubscriptionRequest, type SubscriptionRequest } from './subscription-input.js'
import { firstEventOffset } from './delivery/shape.js'

/** A durable subscription created, replaced or deleted; told to listeners once the change is on disk. */
export type SubscriptionChange = { kind: 'upsert'; subscription: Subscription } | { kind: 'delete'; subscription: Subscription }

export interface SubscriptionManagerDeps {
  db: Database
  repo: SubscriptionsRepo
  /** The sequence of the newest event in the log (0 when empty): where `newest` starts. */
  lastSequence: () => number
  log: (line: string) => void
}

/**
 * Durable subscriptions (FireFly's `CreateUpdateDurableSubscription`): their definitions and their offsets, created
 * and replaced through the REST API, read by the delivery engine, which hears of each change through `onChange`.
 *
 * The starting point is locked in at creation, as FireFly does (`offset_calc.go`), so that what a subscription
 * receives does not depend on when a client first connects: `oldest` is stored as firstEvent `"-1"` (every event),
 * `newest` (the default) as the newest event's sequence then, a number as itself. The offset starts there (never
 * below 0: sequences start at 1, so 0 is "before everything", as FireFly's -1). Replacing a subscription (PUT) keeps
 * its id, created time, locked firstEvent and offset: only its filter and options change.
 */
export class SubscriptionManager {
  private readonly listeners = new Set<(c: SubscriptionChange) => void>()

  /** Set by the delivery engine, which is made after this (it reads subscriptions from here). */
  durable: ((id: SubscriptionId) => number | undefined) | undefined

  constructor(private readonly deps: SubscriptionManagerDeps) {}

  /** POST: a new subscription; CONFLICT (409) if the name is taken in the namespace. */
  async create(namespace: string, body: unknown): Promise<Subscription> {
    const req = parseSubscriptionRequest(body)
    const { repo } = this.deps
    // Checked again inside the transaction: another create of the same name may be ahead of this one in the tick.
    this.refuseTaken(namespace, req.name, repo.byName(namespace, req.name))
    const sub = await this.deps.db.transaction((tx) => {
      this.refuseTaken(namespace, req.name, repo.byName(namespace, req.name, tx))
      return this.insert(namespace, req, (s, offset) => repo.insert(tx, s, offset))
    })
    this.notify({ kind: 'upsert', subscription: sub })
    return sub
  }

  /**
   * PUT: creates the subscription, or replaces the filter and options of the one with that name, keeping its id,
   * created time, locked-in firstEvent and offset (FireFly never resets a subscription's position). A replacement
   * identical to what is stored writes nothing and tells no listener.
   */
  async upsert(namespace: string, body: unknown): Promise<{ subscription: Subscription; created: boolean }> {
    const req = parseSubscriptionRequest(body)
    const { repo } = this.deps
    const outcome = await this.deps.db.transaction((tx): { subscription: Subscription; created: boolean; changed: boolean } => {
      const existing = repo.byName(namespace, req.name, tx)
      if (!existing) return { subscription: this.insert(namespace, req, (s, offset) => repo.insert(tx, s, offset)), created: true, changed: true }
      const options: SubscriptionOptions = { ...withoutFirstEvent(req.options), ...(existing.options.firstEvent !== undefined ? { firstEvent: existing.options.firstEvent } : {}) }
      if (same(existing, req.transport, req.filter, options)) return { subscription: existing, created: false, changed: false }
      const replaced: Subscription = { ...existing, transport: req.transport, filter: req.filter, options: sortedOptions(options), updated: now() }
      repo.replace(tx, replaced)
      return { subscription: replaced, created: false, changed: true }
    })
    if (outcome.changed) this.notify({ kind: 'upsert', subscription: outcome.subscription })
    return { subscription: outcome.subscription, created: outcome.created }
  }

  /** By id (a UUID, any case) or by name: names are never UUIDs, so the two cannot be confused. */
  get(namespace: string, idOrName: string): Subscription | undefined {
    return isUuid(idOrName) ? this.deps.repo.byId(namespace, idOrName.toLowerCase()) : this.deps.repo.byName(namespace, idOrName)
  }

  byName(namespace: string, name: string): Subscription | undefined {
    return this.deps.repo.byName(namespace, name)
  }

  /** Newest first, filtered and paged (FireFly's subscription query fields). */
  list(namespace: string, q: CollectionQuery): Subscription[] {
    return this.deps.repo.list(namespace, q)
  }

  /** Deletes a subscription (by id or name) with its offset; undefined if there is none. */
  async delete(namespace: string, idOrName: string): Promise<Subscription | undefined> {
    const { repo } = this.deps
    const gone = await this.deps.db.transaction((tx) => {
      const sub = isUuid(idOrName) ? repo.byId(namespace, idOrName.toLowerCase(), tx) : repo.byName(namespace, idOrName, tx)
      if (sub) repo.delete(tx, sub.id)
      return sub
    })
    if (gone) this.notify({ kind: 'delete', subscription: gone })
    return gone
  }

  /** The stored offset: every event up to it is acknowledged. NOT_FOUND once the subscription is deleted. */
  currentOffset(id: SubscriptionId): number {
    const offset = this.deps.repo.offset(id)
    if (offset === undefined) throw new ParleyError('NOT_FOUND', `subscription ${id} not found`)
    return offset
  }

  /**
   * The offset a restart would resume from, for `?fetchstatus`: what delivery has made durable when it is running
   * (the table may already hold a later one whose commit is still being synced), else the stored one.
   */
  durableOffset(id: SubscriptionId): number {
    const offset = this.durable?.(id) ?? this.deps.repo.offset(id)
    if (offset === undefined) throw new ParleyError('NOT_FOUND', `subscription ${id} not found`)
    return offset
  }

  /**
   * Records a subscription's offset (the delivery engine's acknowledgements); resolves once it is on disk, with
   * false if the subscription has been deleted meanwhile (nothing is written then).
   */
  async setOffset(id: SubscriptionId, offset: number): Promise<boolean> {
    if (!Number.isSafeInteger(offset) || offset < 0) throw new ParleyError('INVALID_FIELD', `an offset is a sequence number >= 0, not ${offset}`)
    return this.deps.db.transaction((tx) => this.deps.repo.setOffset(tx, id, offset))
  }

  /** Hears every change once it is durable, in the order they were made; returns the way to stop hearing them. */
  onChange(listener: (c: SubscriptionChange) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private insert(namespace: string, req: SubscriptionRequest, store: (s: Subscription, offset: number) => void): Subscription {
    const locked = firstEventOffset(req.options.firstEvent, this.deps.lastSequence())
    const sub: Subscription = {
      id: newId<SubscriptionId>(),
      namespace,
      name: req.name,
      transport: req.transport,
      filter: req.filter,
      options: sortedOptions({ ...req.options, firstEvent: String(locked) }),
      created: now(),
    }
    store(sub, Math.max(locked, 0))
    return sub
  }

  private refuseTaken(namespace: string, name: string, existing: Subscription | undefined): void {
    if (existing) throw new ParleyError('CONFLICT', `a subscription with name '${namespace}:${name}' already exists (id ${existing.id}); PUT replaces it (FireFly FF10193)`)
  }

  private notify(change: SubscriptionChange): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(change)
      } catch (err) {
        // The change is durable and answered; a listener's failure is its own, and the others still hear it.
        this.deps.log(`subscriptions: a listener failed on the ${change.kind} of ${change.subscription.namespace}:${change.subscription.name}: ${errorMessage(err)}`)
      }
    }
  }
}

function withoutFirstEvent(o: SubscriptionOptions): SubscriptionOptions {
  const { firstEvent: _ignored, ...rest } = o
  return rest
}

/** Options in one key order, so that stored JSON compares equal for equal options. */
function sortedOptions(o: SubscriptionOptions): SubscriptionOptions {
  return {
    ...(o.firstEvent !== undefined ? { firstEvent: o.firstEvent } : {}),
    ...(o.readAhead !== undefined ? { readAhead: o.readAhead } : {}),
    ...(o.batch !== undefined ? { batch: o.batch } : {}),
    ...(o.batchTimeout !== undefined ? { batchTimeout: o.batchTimeout } : {}),
  }
}

function same(s: Subscription, transport: Subscription['transport'], filter: Subscription['filter'], options: SubscriptionOptions): boolean {
  return s.transport === transport && JSON.stringify(s.filter) === JSON.stringify(filter) && JSON.stringify(s.options) === JSON.stringify(sortedOptions(options))
}
