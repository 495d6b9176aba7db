import type { Database, Tx } from '../database.js'
import type { BatchId, Hash } from '../../core/ids.js'
import { alsoIn, IN_LIST, inList } from '../in-list.js'
import type { MessageRef } from './messages.js'
import { refKey } from './ref-key.js'
import type { DataRef } from '../../model/index.js'

/** A private batch another member delivered, as the expiry of never-pinned batches reads it. */
export interface DeliveredBatch {
  seq: number
  id: BatchId
  hash: Hash
  /** The key that signed it: only its pins decide it (a squatter's pin of its id does not make it pinned). */
  key: string
  /**
   * The messages its manifest lists, by id and hash: another batch may share its id, and its messages are not this
   * one's; another message may share an id with one of them.
   */
  messages: MessageRef[]
  /** When it was stored here; absent for batches stored before schema v10 recorded it. */
  received?: string
}

/** A pending message of a batch being deleted, with the data items it names. */
export interface PendingOfBatch {
  id: string
  hash: string
  data: DataRef[]
}

const CURSOR_KEY = 'quotas.unpinnedBatchCursor'

/** A stored pinned-kind private batch of a peer that no private pin of its key names yet, with what storing it keeps. */
export interface UnpinnedCharge {
  id: BatchId
  hash: Hash
  key: string
  /** The author's DID. */
  author: string
  /** Its manifest's and its data values' bytes (UTF-8) as stored: what aggregator/unpinned-quota.ts batchCharge counts. */
  bytes: number
}

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
      .all<{ seq: number; id: string; hash: string; key: string; manifest: string; received: string | null }>(
        "SELECT seq, id, hash, key, manifest, received FROM batches WHERE seq > ? AND local = 0 AND type = 'private' ORDER BY seq LIMIT ?",
        [seq, limit],
      )
      .map((r) => ({
        seq: Number(r.seq),
        id: r.id as BatchId,
        hash: r.hash as Hash,
        key: r.key,
        messages: manifestRefs(r.manifest),
        ...(r.received ? { received: r.received } : {}),
      }))
  }

  /**
   * Every private batch a peer delivered to be pinned (its manifest's transaction is `batch_pin`) that no private pin of
   * its key names yet and that the expiry has not passed (it deletes those it passes but pinned or decided ones): what
   * the quota on such batches counts at start. One query; each data item its manifest lists counts its value once,
   * however many digests it is stored under (its hash covers the value), as on delivery.
   */
  charges(): UnpinnedCharge[] {
    return this.db
      .all<{ id: string; hash: string; key: string; author: string; bytes: number | null }>(
        `SELECT b.id, b.hash, b.key, b.author,
                octet_length(b.manifest) + COALESCE((SELECT SUM((SELECT octet_length(d.value) FROM data d
                  WHERE d.id = json_extract(j.value, '$.id') AND d.hash = json_extract(j.value, '$.hash') LIMIT 1))
                  FROM json_each(json_extract(b.manifest, '$.data')) j), 0) AS bytes
           FROM batches b
          WHERE b.seq > COALESCE((SELECT CAST(value AS INTEGER) FROM node_state WHERE key = ?), 0)
            AND b.local = 0 AND b.type = 'private' AND b.state = 'received'
            AND NOT EXISTS (SELECT 1 FROM pins p WHERE p.batch_id = b.id AND p.batch_hash = b.hash AND p.signer = b.key AND p.masked = 1)
            AND json_extract(b.manifest, '$.tx.type') = 'batch_pin'`,
        [CURSOR_KEY],
      )
      .map((r) => ({ id: r.id as BatchId, hash: r.hash as Hash, key: r.key, author: r.author, bytes: Number(r.bytes ?? 0) }))
  }

  /** Whether a message of this batch is decided (an unpinned batch's are, on arrival). */
  hasDecided(tx: Tx, b: DeliveredBatch): boolean {
    // A message's hash covers its id: the rows of these hashes are the batch's messages.
    return (
      b.messages.length > 0 &&
      tx.get(`SELECT 1 AS x FROM messages WHERE local = 0 AND batch_id = ? AND state != 'pending' AND id ${IN_LIST} AND ${alsoIn('hash')} LIMIT 1`, [
        b.id,
        inList(b.messages.map((m) => m.id)),
        inList(b.messages.map((m) => m.hash)),
      ]) !== undefined
    )
  }

  /**
   * The batch's pending messages: those of its manifest stored with its id, less any that another batch under the same
   * id lists too (its author may have delivered two versions of a batch: the other one, pinned, still needs them);
   * those are `shared`, each with the hash of that other batch (the first by hash).
   */
  pendingOf(tx: Tx, b: DeliveredBatch): { pending: PendingOfBatch[]; shared: (PendingOfBatch & { twin: Hash })[] } {
    const twins = new Map<string, Hash>()
    for (const r of tx.all<{ hash: string; manifest: string }>('SELECT hash, manifest FROM batches WHERE id = ? AND hash != ? ORDER BY hash', [b.id, b.hash])) {
      for (const m of manifestRefs(r.manifest)) if (!twins.has(refKey(m))) twins.set(refKey(m), r.hash as Hash)
    }
    if (b.messages.length === 0) return { pending: [], shared: [] }
    const rows = tx
      .all<{ id: string; hash: string; data: string }>(`SELECT id, hash, data FROM messages WHERE local = 0 AND batch_id = ? AND state = 'pending' AND id ${IN_LIST} AND ${alsoIn('hash')}`, [
        b.id,
        inList(b.messages.map((m) => m.id)),
        inList(b.messages.map((m) => m.hash)),
      ])
      .map((r) => ({ id: r.id, hash: r.hash, data: JSON.parse(r.data) as DataRef[] }))
    const pending: PendingOfBatch[] = []
    const shared: (PendingOfBatch & { twin: Hash })[] = []
    for (const r of rows) {
      const twin = twins.get(refKey(r))
      if (twin === undefined) pending.push(r)
      else shared.push({ ...r, twin })
    }
    return { pending, shared }
  }

  /** Deletes the given pending messages and the batch itself (by id and hash: another batch may share the id). */
  deleteBatch(tx: Tx, b: DeliveredBatch, pending: readonly PendingOfBatch[]): void {
    if (pending.length > 0) {
      tx.run(`DELETE FROM messages WHERE local = 0 AND state = 'pending' AND id ${IN_LIST} AND ${alsoIn('hash')}`, [inList(pending.map((m) => m.id)), inList(pending.map((m) => m.hash))])
    }
    tx.run('DELETE FROM batches WHERE id = ? AND hash = ? AND local = 0', [b.id, b.hash])
  }
}

/** The messages a stored batch manifest lists, in its order. */
function manifestRefs(manifest: string): MessageRef[] {
  return (JSON.parse(manifest) as { messages: MessageRef[] }).messages.map((e) => ({ id: e.id, hash: e.hash }))
}
