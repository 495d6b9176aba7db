import type { Database, Tx } from '../database.js'
import { IN_LIST, inList, writeRows } from '../in-list.js'
import type { BatchId, Hash, TxId } from '../../core/ids.js'
import type { Pin, PinnedBatch } from '../../model/index.js'


/** A pin as the chain gives it; the table numbers it and keeps its standing. */
export type NewPin = Omit<Pin, 'seq' | 'dispatched' | 'repeated'>

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
  repeated: number
  [k: string]: string | number
}

/** On-chain contexts in chain order; the aggregator walks the undispatched ones. */
export class PinsRepo {
  constructor(private readonly db: Database) {}

  /**
   * Every pin is kept, per (batch id, batch hash, signer, index) (v14): another signer's pin of the same batch id, or
   * one naming another hash, is stored beside it. A batch pinned twice by one signer (a retried submission) is ordered
   * once: its first pin stays.
   */
  insert(tx: Tx, p: NewPin): void {
    this.insertMany(tx, [p])
  }

  /**
   * In the order given (their sequences follow it): the contexts of a pinned batch, with few statements. Each is
   * written `held` if the batch it names (id and hash) is stored here and not refused (see v11, v14); a batch stored
   * later marks them itself. A private pin is written `repeated` (v22) when its signer pinned its hash before, here or
   * earlier in `pins`: pins come in chain order, so one read of the pins of their hashes tells, whatever their number.
   */
  insertMany(tx: Tx, pins: readonly NewPin[]): void {
    const held = new Map<string, number>()
    const heldOf = (batchId: string, batchHash: string): number => {
      const key = `${batchId}/${batchHash}`
      let h = held.get(key)
      if (h === undefined) {
        h = tx.get("SELECT 1 AS x FROM batches WHERE id = ? AND hash = ? AND state != 'refused'", [batchId, batchHash]) ? 1 : 0
        held.set(key, h)
      }
      return h
    }
    const seen = this.pinnedBefore(tx, pins)
    const repeatedOf = (p: NewPin): number => {
      if (!p.masked) return 0
      const key = `${p.hash}/${p.signer}`
      if (seen.has(key)) return 1
      seen.add(key)
      return 0
    }
    writeRows(
      tx,
      'INSERT INTO pins (batch_id, batch_hash, idx, hash, masked, signer, event_id, held, repeated)',
      'ON CONFLICT (batch_id, batch_hash, signer, idx) DO NOTHING',
      pins.map((p) => [p.batchId, p.batchHash, p.index, p.hash, p.masked ? 1 : 0, p.signer, p.eventId, heldOf(p.batchId, p.batchHash), repeatedOf(p)]),
    )
  }

  /** The (hash, signer) pairs, as `hash/signer`, of the pins held already with the hashes of `pins`' private ones. */
  private pinnedBefore(tx: Tx, pins: readonly NewPin[]): Set<string> {
    const hashes = [...new Set(pins.filter((p) => p.masked).map((p) => p.hash))]
    if (hashes.length === 0) return new Set()
    return new Set(tx.all<{ hash: string; signer: string }>(`SELECT hash, signer FROM pins WHERE hash ${IN_LIST}`, [inList(hashes)]).map((r) => `${r.hash}/${r.signer}`))
  }

  undispatchedAfter(seq: number, limit: number, tx?: Tx): Pin[] {
    return (tx ?? this.db).all<Row>('SELECT * FROM pins WHERE dispatched = 0 AND seq > ? ORDER BY seq LIMIT ?', [seq, limit]).map(fromRow)
  }

  /**
   * The waiting pins whose batch is here (`held`, kept by the schema: see v7) in (after, upTo], in chain order: what
   * a rewind walks again. Pins of batches not here can only wait, so however many there are, they are not read: the
   * index holds only waiting held pins (INDEXED BY makes the statement fail to prepare rather than quietly scan
   * pins_waiting, which SQLite's planner prefers here without statistics).
   */
  heldWaitingBetween(after: number, upTo: number, limit: number, tx?: Tx): Pin[] {
    return (tx ?? this.db).all<Row>('SELECT * FROM pins INDEXED BY pins_held_waiting WHERE dispatched = 0 AND held = 1 AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?', [after, upTo, limit]).map(fromRow)
  }

  /** The first waiting pin whose batch is here: where a rewind that may concern any of them starts. */
  minHeldWaitingSeq(): number | undefined {
    const r = this.db.get<{ s: number | null }>('SELECT MIN(seq) AS s FROM pins INDEXED BY pins_held_waiting WHERE dispatched = 0 AND held = 1')
    return r?.s ?? undefined
  }

  /**
   * Whether an earlier broadcast pin of context `hash` is still waiting (an identity claim's, which holds this one
   * back). Private (masked) pins are left out: only their group's members ever use them, so one that equals the
   * context would hold it on members outside the group alone.
   */
  earlierUndispatched(tx: Tx, hash: Hash, beforeSeq: number): boolean {
    return tx.get('SELECT 1 AS x FROM pins WHERE hash = ? AND dispatched = 0 AND masked = 0 AND seq < ? LIMIT 1', [hash, beforeSeq]) !== undefined
  }

  /**
   * Whether `signer` signed a broadcast pin before `beforeSeq` that still waits: what a definition naming an identity
   * that is not registered yet may wait for (its claim is a broadcast signed by its own org's key, so either that pin
   * precedes on chain or the identity cannot be registered in time). Private (masked) pins are left out: only their
   * group's members ever use them, and members outside the group would wait where those inside decide.
   */
  earlierUndispatchedBySigner(tx: Tx, signer: string, beforeSeq: number): boolean {
    return tx.get('SELECT 1 AS x FROM pins WHERE dispatched = 0 AND masked = 0 AND seq < ? AND signer = ? LIMIT 1', [beforeSeq, signer]) !== undefined
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

  /**
   * The first private (masked) pin on chain of hash `hash` signed by `signer`, and whether its batch is held here as
   * one that can carry a message of group `group`: two batches of one author may carry the same private pin (the same
   * message sent twice, or two messages at one nonce), and the first pinned decides it. A broadcast pin of that hash
   * (one naming a payload reference) decides no private message (ordering.ts) and is left out. Held means a batch of
   * the signer's own key for group `group`. One held under another key (the signer pinned another's pair), or one for
   * another group (the signer copied this context's pin onto a batch of another group), carries none of the checked
   * message's group's messages and never will; only that batch's own group's members can hold it, so on every member
   * the pin counts as not held, as on a member without the batch. A refusal recorded for the pair (some pin of it
   * named a payload that is no broadcast batch of it, whoever signed that pin) says nothing of a private batch: its
   * pin counts, not held, until the batch itself comes. One probe of `pins_hash`, plus the batch.
   */
  firstPrivate(hash: Hash, signer: string, group: Hash, tx?: Tx): { pin: Pin; held: boolean } | undefined {
    const r = (tx ?? this.db).get<Row & { state: string | null; batch_key: string | null; batch_grp: string | null }>(
      `SELECT p.*, b.state, b.key AS batch_key, b.grp AS batch_grp FROM pins p LEFT JOIN batches b ON b.id = p.batch_id AND b.hash = p.batch_hash
        WHERE p.hash = ? AND p.signer = ? AND p.masked = 1 ORDER BY p.seq LIMIT 1`,
      [hash, signer],
    )
    return r && { pin: fromRow(r), held: r.state !== null && r.state !== undefined && r.state !== 'refused' && r.batch_key === signer && r.batch_grp === group }
  }

  /**
   * The pins that decide the messages of batch (id, hash): those its own key signed, by index (one per index: a
   * signer's second pin of a batch is not stored). Pins of other signers, or naming another hash, decide nothing of it.
   */
  deciding(batchId: string, batchHash: string, key: string, tx?: Tx): Pin[] {
    return (tx ?? this.db).all<Row>('SELECT * FROM pins WHERE batch_id = ? AND batch_hash = ? AND signer = ? ORDER BY idx', [batchId, batchHash, key]).map(fromRow)
  }

  /**
   * Whether batch (id, hash) has a private (masked) pin signed by its key `key`: what makes a delivered private batch
   * pinned (a squatter's pin of its id, or its own pair pinned as a broadcast, does not). One probe, one row at most.
   */
  pinnedPrivately(batchId: string, batchHash: string, key: string, tx?: Tx): boolean {
    return (tx ?? this.db).get('SELECT 1 AS x FROM pins WHERE batch_id = ? AND batch_hash = ? AND signer = ? AND masked = 1 LIMIT 1', [batchId, batchHash, key]) !== undefined
  }

  /** Every pin naming batch id `batchId`, whoever signed it and whatever hash it names, by index (tests, diagnostics). */
  ofBatch(batchId: string, tx?: Tx): Pin[] {
    return (tx ?? this.db).all<Row>('SELECT * FROM pins WHERE batch_id = ? ORDER BY idx, seq', [batchId]).map(fromRow)
  }

  /** The pins a BatchPin event stored for batch (id, hash) and its signer (a refused payload frees those). */
  ofEvent(p: { batchId: string; batchHash: string; signer: string; eventId: string }, tx?: Tx): Pin[] {
    return (tx ?? this.db).all<Row>('SELECT * FROM pins WHERE batch_id = ? AND batch_hash = ? AND signer = ? AND event_id = ? ORDER BY idx', [p.batchId, p.batchHash, p.signer, p.eventId]).map(fromRow)
  }

  /**
   * The first waiting pin naming batch (id, hash) (any hash when not given), whoever signed it. Read through the
   * batch's own pins (unary + keeps SQLite from walking every waiting pin in order instead).
   */
  minUndispatchedSeqOfBatch(batchId: string, batchHash?: string, tx?: Tx): number | undefined {
    const db = tx ?? this.db
    const r =
      batchHash === undefined
        ? db.get<{ s: number | null }>('SELECT MIN(seq) AS s FROM pins WHERE batch_id = ? AND +dispatched = 0', [batchId])
        : db.get<{ s: number | null }>('SELECT MIN(seq) AS s FROM pins WHERE batch_id = ? AND batch_hash = ? AND +dispatched = 0', [batchId, batchHash])
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
  waitingBroadcast(): { seq: number; hash: Hash; signer: string; eventId: string }[] {
    return this.db
      .all<{ seq: number; hash: string; signer: string; event_id: string }>('SELECT seq, hash, signer, event_id FROM pins INDEXED BY pins_broadcast_waiting WHERE dispatched = 0 AND masked = 0 ORDER BY seq')
      .map((r) => ({ seq: r.seq, hash: r.hash as Hash, signer: r.signer, eventId: r.event_id }))
  }

  /**
   * The sequence of the last pin of the BatchPin event that pin `seq` came in. An event's pins are inserted together,
   * in one statement, so they have consecutive sequences: the walk reads that event's pins and one more.
   */
  lastOfEvent(tx: Tx, seq: number): number {
    const event = tx.get<{ event_id: string }>('SELECT event_id FROM pins WHERE seq = ?', [seq])?.event_id
    if (event === undefined) return seq
    const next = tx.get<{ seq: number }>('SELECT seq FROM pins WHERE seq > ? AND event_id != ? ORDER BY seq LIMIT 1', [seq, event])
    return next ? Number(next.seq) - 1 : Number(tx.get<{ s: number | null }>('SELECT MAX(seq) AS s FROM pins')?.s ?? seq)
  }

  /** Marks the pins of batch id `batchId` at indexes [from, to] used, whoever signed them (tests that settle by hand). */
  markDispatched(tx: Tx, batchId: BatchId, fromIndex: number, toIndex: number): void {
    tx.run('UPDATE pins SET dispatched = 1 WHERE batch_id = ? AND idx BETWEEN ? AND ?', [batchId, fromIndex, toIndex])
  }

  /** Marks pins confirmed or rejected by their sequences: one statement per few hundred pins. */
  markDispatchedSeqs(tx: Tx, seqs: readonly number[]): void {
    tx.write(`UPDATE pins SET dispatched = 1 WHERE seq ${IN_LIST}`, [inList(seqs)])
  }

  /**
   * Broadcast batches pinned on chain, still waiting, whose (id, hash) this node has not stored from the reference the
   * pin names (to fetch after a restart): one per pin event.
   */
  broadcastBatchesNotHeld(): PinnedBatch[] {
    return this.db
      .all<{ batch_id: string; batch_hash: string; tx_id: string; payload_ref: string; author: string; event_id: string }>(
        `SELECT DISTINCT p.batch_id, p.batch_hash, e.tx_id, e.payload_ref, e.author, p.event_id
           FROM pins p JOIN blockchain_events e ON e.id = p.event_id
           LEFT JOIN batches b ON b.id = p.batch_id AND b.hash = p.batch_hash AND b.payload_ref = e.payload_ref AND b.state != 'refused'
          WHERE p.dispatched = 0 AND b.id IS NULL AND e.payload_ref != ''`,
      )
      .map((r) => ({ batchId: r.batch_id as BatchId, batchHash: r.batch_hash as Hash, txId: r.tx_id as TxId, payloadRef: r.payload_ref, signer: r.author, eventId: r.event_id }))
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
    repeated: r.repeated === 1,
  }
}
