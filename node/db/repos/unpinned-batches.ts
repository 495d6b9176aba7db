import type { Database, Tx } from '../database.js'
import type { BatchId, Hash } from '../../core/ids.js'

/** A private batch another member delivered, as the expiry of never-pinned batches reads it. */
export interface DeliveredBatch {
  seq: number
  id: BatchId
  hash: Hash
  /** When it was stored here; absent for batches stored before schema v10 recorded it. */
  received?: string
}

/** A pending message of a batch being deleted, with the data items it names. */
export interface PendingOfBatch {
  id: string
  dataIds: string[]
}

const CURSOR_KEY = 'quotas.unpinnedBatchCursor'

/**
 * What deleting a private batch that was never pinned reads and writes: received private batches in the order they
 * came, whether one has a message already decided, and its pending messages. Pending messages are never in the
 * messages repository's settled cache, so deleting them here leaves that cache right.
 */
export class UnpinnedBatchesRepo {
  constructor(private readonly db: Database) {}

  /** The seq of the last batch the expiry has passed (kept or deleted it). */
  cursor(): number {
    const v = this.db.get<{ value: string }>('SELECT value FROM node_state WHERE key = ?', [CURSOR_KEY])?.value
    return v === undefined ? 0 : Number(v)
  }

  setCursor(tx: Tx, seq: number): void {
    tx.run('INSERT INTO node_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [CURSOR_KEY, String(seq)])
  }

  /** Private batches other members delivered, stored after `seq`, in the order they were stored. */
  deliveredAfter(seq: number, limit: number): DeliveredBatch[] {
    return this.db
      .all<{ seq: number; id: string; hash: string; received: string | null }>("SELECT seq, id, hash, received FROM batches WHERE seq > ? AND local = 0 AND type = 'private' ORDER BY seq LIMIT ?", [seq, limit])
      .map((r) => ({ seq: Number(r.seq), id: r.id as BatchId, hash: r.hash as Hash, ...(r.received ? { received: r.received } : {}) }))
  }

  /** Whether a message stored with this batch is decided (an unpinned batch's are, on arrival). */
  hasDecided(tx: Tx, id: BatchId): boolean {
    return tx.get("SELECT 1 AS x FROM messages WHERE local = 0 AND batch_id = ? AND state != 'pending' LIMIT 1", [id]) !== undefined
  }

  pendingOf(tx: Tx, id: BatchId): PendingOfBatch[] {
    return tx.all<{ id: string; data: string }>("SELECT id, data FROM messages WHERE local = 0 AND batch_id = ? AND state = 'pending'", [id]).map((r) => ({
      id: r.id,
      dataIds: (JSON.parse(r.data) as { id: string }[]).map((d) => d.id),
    }))
  }

  /** Deletes the batch's pending messages and the batch itself (by id and hash: another batch may share the id). */
  deleteBatch(tx: Tx, b: { id: BatchId; hash: Hash }): void {
    tx.run("DELETE FROM messages WHERE local = 0 AND batch_id = ? AND state = 'pending'", [b.id])
    tx.run('DELETE FROM batches WHERE id = ? AND hash = ? AND local = 0', [b.id, b.hash])
  }
}
