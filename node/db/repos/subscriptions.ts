import type { Database, Tx } from '../database.js'
import { andWhere, filterSql } from '../filter-sql.js'
import { SUBSCRIPTION_FIELDS } from '../query-fields.js'
import type { SubscriptionId } from '../../core/ids.js'
import type { Timestamp } from '../../core/time.js'
import type { CollectionQuery, Subscription, SubscriptionFilter, SubscriptionOptions, SubscriptionTransport } from '../../model/index.js'

interface Row {
  seq: number
  id: string
  namespace: string
  name: string
  transport: string
  filter: string
  options: string
  created: string
  updated: string | null
  [k: string]: string | number | null
}

/**
 * Durable subscriptions and, beside each, its offset: the highest event sequence up to which its deliveries are
 * acknowledged. The offset is written with the subscription and deleted with it, and nothing else here touches it,
 * so replacing a subscription's definition never moves its position.
 */
export class SubscriptionsRepo {
  constructor(private readonly db: Database) {}

  /** Stores a new subscription and its starting offset. The caller has checked that its name is free. */
  insert(tx: Tx, sub: Subscription, offset: number): void {
    tx.run('INSERT INTO subscriptions (id, namespace, name, transport, filter, options, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', [
      sub.id,
      sub.namespace,
      sub.name,
      sub.transport,
      JSON.stringify(sub.filter),
      JSON.stringify(sub.options),
      sub.created,
      sub.updated ?? null,
    ])
    tx.run('INSERT INTO offsets (subscription, current) VALUES (?, ?)', [sub.id, offset])
  }

  /** Rewrites a stored subscription's definition (transport, filter, options, updated), by id; never its offset. */
  replace(tx: Tx, sub: Subscription): void {
    tx.run('UPDATE subscriptions SET transport = ?, filter = ?, options = ?, updated = ? WHERE id = ?', [
      sub.transport,
      JSON.stringify(sub.filter),
      JSON.stringify(sub.options),
      sub.updated ?? null,
      sub.id,
    ])
  }

  /** Inside a transaction pass `tx`, so the read sees that transaction's own writes. */
  byId(namespace: string, id: string, tx?: Tx): Subscription | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM subscriptions WHERE id = ? AND namespace = ?', [id, namespace])
    return r && fromRow(r)
  }

  /** Inside a transaction pass `tx`, so the read sees that transaction's own writes. */
  byName(namespace: string, name: string, tx?: Tx): Subscription | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM subscriptions WHERE namespace = ? AND name = ?', [namespace, name])
    return r && fromRow(r)
  }

  /** Newest first. */
  list(namespace: string, q: CollectionQuery): Subscription[] {
    const conds = ['namespace = ?']
    const params: (string | number)[] = [namespace]
    andWhere(conds, params, filterSql(q.filter, SUBSCRIPTION_FIELDS))
    return this.db.all<Row>(`SELECT * FROM subscriptions WHERE ${conds.join(' AND ')} ORDER BY seq DESC LIMIT ? OFFSET ?`, [...params, q.limit, q.skip]).map(fromRow)
  }

  /** Every subscription of every namespace, oldest first: what a delivery engine starts from. */
  all(): Subscription[] {
    return this.db.all<Row>('SELECT * FROM subscriptions ORDER BY seq').map(fromRow)
  }

  /** Removes a subscription and its offset; answers whether there was one. */
  delete(tx: Tx, id: SubscriptionId): boolean {
    tx.run('DELETE FROM offsets WHERE subscription = ?', [id])
    return tx.run('DELETE FROM subscriptions WHERE id = ?', [id]).changes > 0
  }

  /** The stored offset; undefined when there is no such subscription. Inside a transaction pass `tx`. */
  offset(id: SubscriptionId, tx?: Tx): number | undefined {
    const r = (tx ?? this.db).get<{ current: number }>('SELECT current FROM offsets WHERE subscription = ?', [id])
    return r === undefined ? undefined : Number(r.current)
  }

  /**
   * Moves a subscription's offset (to any value: moving it back is how a delivery engine redelivers). Only an existing
   * subscription's: an acknowledgement that arrives after its subscription was deleted writes nothing (false).
   */
  setOffset(tx: Tx, id: SubscriptionId, offset: number): boolean {
    return tx.run('UPDATE offsets SET current = ? WHERE subscription = ?', [offset, id]).changes > 0
  }
}

function fromRow(r: Row): Subscription {
  return {
    id: r.id as SubscriptionId,
    namespace: r.namespace,
    name: r.name,
    transport: r.transport as SubscriptionTransport,
    // Written by insert/replace from a normalised definition, so read back as that shape.
    filter: JSON.parse(r.filter) as SubscriptionFilter,
    options: JSON.parse(r.options) as SubscriptionOptions,
    created: r.created as Timestamp,
    ...(r.updated !== null ? { updated: r.updated as Timestamp } : {}),
  }
}
