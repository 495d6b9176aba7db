import type { Database } from '../database.js'
import type { Timestamp } from '../../core/time.js'

/**
 * Namespaces as the database holds them. A namespace is not declared here: any name is usable, and it holds whatever
 * was sent, received, uploaded or subscribed in it. Each read walks an index by namespace, a step per namespace
 * rather than a row per message.
 */
export class NamespacesRepo {
  constructor(private readonly db: Database) {}

  /** Every namespace that holds a message, a data item, an event or a subscription. */
  names(): string[] {
    const names = new Set<string>()
    for (const [table, index] of TABLES) for (const n of this.distinct(table, index)) names.add(n)
    return [...names].sort()
  }

  /** When the namespace first held something here: its oldest event, data item or subscription. */
  firstUse(namespace: string): Timestamp | undefined {
    const r = this.db.get<{ t: string | null }>(
      `SELECT MIN(t) AS t FROM (
         SELECT (SELECT created FROM events WHERE namespace = ? ORDER BY seq LIMIT 1) AS t
         UNION ALL SELECT (SELECT created FROM data WHERE namespace = ? ORDER BY seq LIMIT 1)
         UNION ALL SELECT (SELECT created FROM subscriptions WHERE namespace = ? ORDER BY seq LIMIT 1)
       ) AS firsts`,
      [namespace, namespace, namespace],
    )
    return (r?.t ?? undefined) as Timestamp | undefined
  }

  /** The distinct namespaces of a table, by skipping through an index that leads with the namespace. */
  private distinct(table: string, index: string): string[] {
    return this.db
      .all<{ n: string }>(
        `WITH RECURSIVE ns(n) AS (
           SELECT (SELECT MIN(namespace) FROM ${table} INDEXED BY ${index})
           UNION ALL
           SELECT (SELECT MIN(namespace) FROM ${table} INDEXED BY ${index} WHERE namespace > ns.n) FROM ns WHERE ns.n IS NOT NULL
         ) SELECT n FROM ns WHERE n IS NOT NULL`,
      )
      .map((r) => r.n)
  }
}

/** The tables a namespace's contents live in, each with its index by namespace. */
const TABLES: readonly (readonly [string, string])[] = [
  ['messages', 'messages_natural'],
  ['data', 'data_namespace'],
  ['events', 'events_namespace'],
  ['subscriptions', 'subscriptions_namespace'],
]
