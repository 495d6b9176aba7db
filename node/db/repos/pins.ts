import type { Database, Tx } from '../database.js'
import { IN_LIST, inList, insertRows } from '../in-list.js'
import type { BatchId, Hash, TxId } from '../../core/ids.js'
import type { Pin, PinnedBatch } from '../../model/index.js'


interface Row {
  seq: number
  batch_id: string
  batch_hash: string
  idx: number
  hash: string
  masked: number
  signer: string
  event_id: string
  dispatched: number
  [k: string]: string | number
}

/** On-chain contexts in chain order; the aggregator walks the undispatched ones. */
export class PinsRepo {
  constructor(private readonly db: Database) {}

  /** The first pin of a (batch, index) wins: a batch pinned twice (a retried submission) is ordered once. */
  insert(tx: Tx, p: Omit<Pin, 'seq' | 'dispatched'>): void {
    this.insertMany(tx, [p])
  }

  /**
   * In the order given (their sequences follow it): the contexts of a pinned batch, with few statements. Each is
   * written `held` if its batch is stored here and not refused (see v11); a batch stored later marks them itself.
   */
  insertMany(tx: Tx, pins: readonly Omit<Pin, 'seq' | 'dispatched'>[]): void {
    const held = new Map<string, number>()
    const heldOf = (batchId: string): number => {
      let h = held.get(batchId)
      if (h === undefined) {
        h = tx.get("SELECT 1 AS x FROM batches WHERE id = ? AND state != 'refused'", [batchId]) ? 1 : 0
        held.set(batchId, h)
      }
      return h
    }
    insertRows(
      tx,
      'INSERT INTO pins (batch_id, batch_hash, idx, hash, masked, signer, event_id, held)',
      'ON CONFLICT (batch_id, idx) DO NOTHING',
      pins.map((p) => [p.batchId, p.batchHash, p.index, p.hash, p.masked ? 1 : 0, p.signer, p.eventId, heldOf(p.batchId)]),
    )
  }

  undispatchedAfter(seq: number, limit: number): Pin[] {
    return this.db.all<Row>('SELECT * FROM pins WHERE dispatched = 0 AND seq > ? ORDER BY seq LIMIT ?', [seq, limit]).map(fromRow)
  }

  /**
   * The waiting pins whose batch is here (`held`, kept by the schema: see v7) in (after, upTo], in chain order: what
   * a rewind walks again. Pins of batches not here can only wait, so however many there are, they are not read: the
   * index holds only waiting held pins (INDEXED BY makes the statement fail to prepare rather than quietly scan
   * pins_waiting, which SQLite's planner prefers here without statistics).
   */
  heldWaitingBetween(after: number, upTo: number, limit: number): Pin[] {
    return this.db.all<Row>('SELECT * FROM pins INDEXED BY pins_held_waiting WHERE dispatched = 0 AND held = 1 AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?', [after, upTo, limit]).map(fromRow)
  }

  /** The first waiting pin whose batch is here: where a rewind that may concern any of them starts. */
  minHeldWaitingSeq(): number | undefined {
    const r = this.db.get<{ s: number | null }>('SELECT MIN(seq) AS s FROM pins INDEXED BY pins_held_waiting WHERE dispatched = 0 AND held = 1')
    return r?.s ?? undefined
  }

  /** Whether an earlier pin of the same context is still waiting (which holds this one back). */
  earlierUndispatched(tx: Tx, hash: Hash, beforeSeq: number): boolean {
    return tx.get('SELECT 1 AS x FROM pins WHERE hash = ? AND dispatched = 0 AND seq < ? LIMIT 1', [hash, beforeSeq]) !== undefined
  }

  /**
   * Whether `signer` signed a pin before `beforeSeq` that still waits: what a definition naming an identity that is
   * not registered yet may wait for (its claim is signed by its own org's key, so either that pin precedes on chain
   * or the identity cannot be registered in time).
   */
  earlierUndispatchedBySigner(tx: Tx, signer: string, beforeSeq: number): boolean {
    return tx.get('SELECT 1 AS x FROM pins WHERE dispatched = 0 AND seq < ? AND signer = ? LIMIT 1', [beforeSeq, signer]) !== undefined
  }

  /** One pin by its sequence (a trace naming the pin that holds a context back). */
  bySeq(seq: number): Pin | undefined {
    const r = this.db.get<Row>('SELECT * FROM pins WHERE seq = ?', [seq])
    return r && fromRow(r)
  }

  /** The first pin read with this context hash (a private pin is unique to its message: its pin, if read here). */
  firstOfHash(hash: Hash): Pin | undefined {
    const r = this.db.get<Row>('SELECT * FROM pins WHERE hash = ? ORDER BY seq LIMIT 1', [hash])
    return r && fromRow(r)
  }

  ofBatch(batchId: string, tx?: Tx): Pin[] {
    return (tx ?? this.db).all<Row>('SELECT * FROM pins WHERE batch_id = ? ORDER BY idx', [batchId]).map(fromRow)
  }

  /** Read through the batch's own pins (unary + keeps SQLite from walking every waiting pin in order instead). */
  minUndispatchedSeqOfBatch(batchId: string): number | undefined {
    const r = this.db.get<{ s: number | null }>('SELECT MIN(seq) AS s FROM pins WHERE batch_id = ? AND +dispatched = 0', [batchId])
    return r?.s ?? undefined
  }

  maxSeq(): number {
    return Number(this.db.get<{ s: number | null }>('SELECT MAX(seq) AS s FROM pins')?.s ?? 0)
  }

  minUndispatchedSeq(): number | undefined {
    const r = this.db.get<{ s: number | null }>('SELECT MIN(seq) AS s FROM pins WHERE dispatched = 0')
    return r?.s ?? undefined
  }

  /** Every pin still waiting (broadcast and private), in chain order. */
  waiting(): { seq: number; hash: Hash }[] {
    return this.db.all<{ seq: number; hash: string }>('SELECT seq, hash FROM pins WHERE dispatched = 0 ORDER BY seq').map((r) => ({ seq: r.seq, hash: r.hash as Hash }))
  }

  /**
   * The unmasked (broadcast) pins still waiting, in chain order: what the aggregator's per-context queues start from.
   * Private pins are left out: each is unique, ordered by its nonce (nextpins), and holds no context back.
   */
  waitingBroadcast(): { seq: number; hash: Hash }[] {
    return this.db.all<{ seq: number; hash: string }>('SELECT seq, hash FROM pins INDEXED BY pins_broadcast_waiting WHERE dispatched = 0 AND masked = 0 ORDER BY seq').map((r) => ({ seq: r.seq, hash: r.hash as Hash }))
  }

  /** Marks pins confirmed or rejected by their sequences: one statement per few hundred pins. */
  markDispatchedSeqs(tx: Tx, seqs: readonly number[]): void {
    tx.run(`UPDATE pins SET dispatched = 1 WHERE seq ${IN_LIST}`, [inList(seqs)])
  }

  /** Broadcast batches pinned on chain, still waiting, that this node holds no record of (to fetch after a restart). */
  broadcastBatchesNotHeld(): PinnedBatch[] {
    return this.db
      .all<{ batch_id: string; batch_hash: string; tx_id: string; payload_ref: string; author: string }>(
        `SELECT DISTINCT p.batch_id, p.batch_hash, e.tx_id, e.payload_ref, e.author
           FROM pins p JOIN blockchain_events e ON e.id = p.event_id
           LEFT JOIN batches b ON b.id = p.batch_id
          WHERE p.dispatched = 0 AND b.id IS NULL AND e.payload_ref != ''`,
      )
      .map((r) => ({ batchId: r.batch_id as BatchId, batchHash: r.batch_hash as Hash, txId: r.tx_id as TxId, payloadRef: r.payload_ref, signer: r.author }))
  }

  markDispatched(tx: Tx, batchId: BatchId, fromIndex: number, toIndex: number): void {
    tx.run('UPDATE pins SET dispatched = 1 WHERE batch_id = ? AND idx BETWEEN ? AND ?', [batchId, fromIndex, toIndex])
  }
}

function fromRow(r: Row): Pin {
  return {
    seq: r.seq,
    batchId: r.batch_id as BatchId,
    batchHash: r.batch_hash as Hash,
    index: r.idx,
    hash: r.hash as Hash,
    masked: r.masked === 1,
    signer: r.signer,
    eventId: r.event_id,
    dispatched: r.dispatched === 1,
  }
}
