import type { Database, Tx } from '../database.js'
import type { Hash } from '../../core/ids.js'
import type { Timestamp } from '../../core/time.js'
import type { AnnouncedBlob, BlobRefVerdict } from '../../model/index.js'



interface Row {
  ok: number
  reason: string | null
  [k: string]: string | number | null
}

/**
 * What this node found at each announced blob reference: the content there is the announced blob, or it is not
 * (and never will be). A broadcast's blob counts only once its reference is verified this way, whatever this
 * node may already hold under the same hash, so every member judges the same announcement alike.
 */
export class BlobRefsRepo {
  constructor(private readonly db: Database) {}

  settle(tx: Tx, ref: AnnouncedBlob, verdict: BlobRefVerdict, at: Timestamp): void {
    tx.run('INSERT INTO blob_refs (hash, size, public, ok, reason, created) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (hash, size, public) DO NOTHING', [
      ref.hash,
      ref.size,
      ref.public,
      verdict.ok ? 1 : 0,
      verdict.ok ? null : verdict.reason,
      at,
    ])
  }

  /** A reference already known to serve this blob (published here, or verified when fetched), if there is one. */
  verifiedPublic(hash: Hash, size: number): string | undefined {
    return this.db.get<{ public: string }>('SELECT public FROM blob_refs WHERE hash = ? AND size = ? AND ok = 1 ORDER BY seq LIMIT 1', [hash, size])?.public
  }

  /** The verdict on the reference with when it was reached (published here, or fetched and checked); undefined before. */
  settled(ref: AnnouncedBlob): (BlobRefVerdict & { at: Timestamp }) | undefined {
    const r = this.db.get<Row & { created: string }>('SELECT ok, reason, created FROM blob_refs WHERE hash = ? AND size = ? AND public = ?', [ref.hash, ref.size, ref.public])
    if (!r) return undefined
    const at = r.created as Timestamp
    return r.ok ? { ok: true, at } : { ok: false, reason: r.reason ?? 'the published content does not match', at }
  }

  /** Undefined while the reference has not been checked yet. */
  verdict(ref: AnnouncedBlob, tx?: Tx): BlobRefVerdict | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT ok, reason FROM blob_refs WHERE hash = ? AND size = ? AND public = ?', [ref.hash, ref.size, ref.public])
    if (!r) return undefined
    return r.ok ? { ok: true } : { ok: false, reason: r.reason ?? 'the published content does not match' }
  }
}
