import type { Database, Tx } from '../database.js'
import type { BatchId, Hash } from '../../core/ids.js'
import { now, type Timestamp } from '../../core/time.js'

export type DeliveryState = 'pending' | 'done' | 'failed'

export interface Delivery {
  batchId: BatchId
  /** The peer's node DID. */
  peer: string
  state: DeliveryState
  attempts: number
  /** When the next attempt is due (epoch ms). */
  nextAt: number
  reason?: string
  /** When it was queued, and when the peer acknowledged or refused it (schema v10; absent on rows settled before). */
  created: Timestamp
  settled?: Timestamp
}

interface Row {
  batch_id: string
  peer: string
  state: string
  attempts: number
  next_at: number
  reason: string | null
  created: string
  settled: string | null
  [k: string]: string | number | null
}

/** The outbound private deliveries: one row per (batch, peer node), see schema v6; the blobs peers acknowledged, v8. */
export class DeliveriesRepo {
  constructor(private readonly db: Database) {}

  /** Adds the rows not there yet (a batch prepared again after a restart keeps its rows and their states). */
  enqueue(tx: Tx, batchId: BatchId, peers: readonly string[], created: Timestamp): void {
    for (const peer of peers) {
      tx.run("INSERT INTO deliveries (batch_id, peer, state, attempts, next_at, created) VALUES (?, ?, 'pending', 0, 0, ?) ON CONFLICT (batch_id, peer) DO NOTHING", [batchId, peer, created])
    }
  }

  ofBatch(batchId: BatchId, tx?: Tx): Delivery[] {
    return (tx ?? this.db).all<Row>('SELECT * FROM deliveries WHERE batch_id = ? ORDER BY peer', [batchId]).map(fromRow)
  }

  /** Every delivery not yet acknowledged nor refused, oldest first. */
  pending(): Delivery[] {
    return this.db.all<Row>("SELECT * FROM deliveries WHERE state = 'pending' ORDER BY created, batch_id, peer").map(fromRow)
  }

  /** The peer acknowledged the batch (at `at`, by default now). */
  done(tx: Tx, batchId: BatchId, peer: string, at: Timestamp = now()): void {
    tx.run("UPDATE deliveries SET state = 'done', attempts = attempts + 1, reason = NULL, settled = ? WHERE batch_id = ? AND peer = ?", [at, batchId, peer])
  }

  /** The peer refused the batch for good (at `at`, by default now). */
  failed(tx: Tx, batchId: BatchId, peer: string, reason: string, at: Timestamp = now()): void {
    tx.run("UPDATE deliveries SET state = 'failed', attempts = attempts + 1, reason = ?, settled = ? WHERE batch_id = ? AND peer = ?", [reason, at, batchId, peer])
  }

  /** Whether the peer node acknowledged the blob (schema v8): it is stored there, so no delivery sends it again. */
  blobDelivered(peer: string, hash: Hash, tx?: Tx): boolean {
    return (tx ?? this.db).get('SELECT 1 AS x FROM delivery_blobs WHERE peer = ? AND hash = ?', [peer, hash]) !== undefined
  }

  /** Records the peer's acknowledgement of a blob (at least once: a second record changes nothing). */
  blobAcknowledged(tx: Tx, peer: string, hash: Hash, created: Timestamp): void {
    tx.run('INSERT INTO delivery_blobs (peer, hash, created) VALUES (?, ?, ?) ON CONFLICT (peer, hash) DO NOTHING', [peer, hash, created])
  }

  /** An attempt that may work later: counted, and the next one scheduled. */
  retryAt(tx: Tx, batchId: BatchId, peer: string, nextAt: number, reason: string): void {
    tx.run('UPDATE deliveries SET attempts = attempts + 1, next_at = ?, reason = ? WHERE batch_id = ? AND peer = ?', [nextAt, reason, batchId, peer])
  }
}

function fromRow(r: Row): Delivery {
  return {
    batchId: r.batch_id as BatchId,
    peer: r.peer,
    state: r.state as DeliveryState,
    attempts: Number(r.attempts),
    nextAt: Number(r.next_at),
    ...(r.reason ? { reason: r.reason } : {}),
    created: r.created as Timestamp,
    ...(r.settled ? { settled: r.settled as Timestamp } : {}),
  }
}
