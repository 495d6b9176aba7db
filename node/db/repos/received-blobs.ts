import type { Database, Tx } from '../database.js'
import type { Hash } from '../../core/ids.js'

/** A blob a peer org sent while nothing referred to it, as charged against that org's quota. */
export interface ReceivedBlob {
  hash: Hash
  org: string
  /** What it counts against the quota: its size, at least a minimum per blob. */
  bytes: number
  /** When it came, epoch ms. */
  received: number
}

const UNREFERENCED = 'NOT EXISTS (SELECT 1 FROM data d WHERE d.blob_hash = received_blobs.hash)'

/**
 * Blobs peers sent that no data item referred to yet (schema v15), per sending org: what the unreferenced-blob quota
 * counts and the sweep deletes after their time. A data item referring to a blob takes it out of the count.
 */
export class ReceivedBlobsRepo {
  constructor(private readonly db: Database) {}

  insert(tx: Tx, b: ReceivedBlob): void {
    tx.run('INSERT INTO received_blobs (hash, org, bytes, received) VALUES (?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING', [b.hash, b.org, b.bytes, b.received])
  }

  /** Drops the rows of blobs a data item now refers to: the message holds them, they count no more. */
  forgetReferenced(tx: Tx): number {
    return tx.run(`DELETE FROM received_blobs WHERE NOT ${UNREFERENCED}`).changes
  }

  /** The bytes charged to each org for blobs still unreferenced. */
  usageByOrg(tx?: Tx): Map<string, number> {
    const rows = (tx ?? this.db).all<{ org: string; bytes: number }>(`SELECT org, SUM(bytes) AS bytes FROM received_blobs WHERE ${UNREFERENCED} GROUP BY org`)
    return new Map(rows.map((r) => [r.org, Number(r.bytes)]))
  }

  /** The bytes charged to `org` for blobs still unreferenced. */
  usageOf(org: string, tx?: Tx): number {
    return Number((tx ?? this.db).get<{ bytes: number | null }>(`SELECT SUM(bytes) AS bytes FROM received_blobs WHERE org = ? AND ${UNREFERENCED}`, [org])?.bytes ?? 0)
  }

  /** Unreferenced blobs received before `before` (epoch ms), oldest first. */
  expired(before: number, limit: number, tx?: Tx): ReceivedBlob[] {
    return (tx ?? this.db)
      .all<{ hash: string; org: string; bytes: number; received: number }>(`SELECT hash, org, bytes, received FROM received_blobs WHERE received < ? AND ${UNREFERENCED} ORDER BY received LIMIT ?`, [before, limit])
      .map((r) => ({ hash: r.hash as Hash, org: r.org, bytes: Number(r.bytes), received: Number(r.received) }))
  }

  delete(tx: Tx, hash: Hash): void {
    tx.run('DELETE FROM received_blobs WHERE hash = ?', [hash])
  }
}
