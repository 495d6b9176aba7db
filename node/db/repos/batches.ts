import type { Database, Tx } from '../database.js'
import { andWhere, filterSql } from '../filter-sql.js'
import { BATCH_FIELDS } from '../query-fields.js'
import type { BatchId, Hash, TxId } from '../../core/ids.js'
import type { Timestamp } from '../../core/time.js'
import type { BatchRecord, BatchState, CollectionQuery } from '../../model/index.js'



interface Row {
  id: string
  type: string
  namespace: string
  author: string
  key: string
  node: string | null
  grp: string | null
  created: string
  hash: string
  manifest: string
  tx_id: string
  payload_ref: string | null
  state: string
  local: number
  chain_tx: string | null
  reason: string | null
  uploaded: string | null
  pin_sent: string | null
  received: string | null
  carried: number
  [k: string]: string | number | null
}

export class BatchesRepo {
  constructor(private readonly db: Database) {}

  /**
   * `received` (schema v10) is written only when given: a batch of this member's has none. A batch is known by (id,
   * hash) (v14): a row with the same pair, or this member's own batch of that id, is kept and nothing is written.
   */
  insert(tx: Tx, b: BatchRecord): void {
    const received = b.received !== undefined
    tx.write(
      `INSERT INTO batches (id, type, namespace, author, key, node, grp, created, hash, manifest, tx_id, payload_ref, state, local, chain_tx, reason${received ? ', received' : ''})
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?${received ? ', ?' : ''}) ON CONFLICT DO NOTHING`,
      [
        b.id,
        b.type,
        b.namespace,
        b.author,
        b.key,
        b.node ?? null,
        b.group ?? null,
        b.created,
        b.hash,
        b.manifest,
        b.txId,
        b.payloadRef ?? null,
        b.state,
        b.local ? 1 : 0,
        b.chainTx ?? null,
        b.reason ?? null,
        ...(received ? [b.received!] : []),
      ],
    )
  }

  /**
   * Notes whether batch (id, hash) holds records of what it carried with messages held from another batch
   * (carried_messages): set when it writes some, cleared when they are forgotten.
   */
  markCarried(tx: Tx, id: string, hash: string, carried = true): void {
    tx.write('UPDATE batches SET carried = ? WHERE id = ? AND hash = ? AND local = 0', [carried ? 1 : 0, id, hash])
  }

  /**
   * Whether the batch (id, hash) is stored here, verified, as downloaded from `payloadRef` (the fetcher's skip: another
   * reference, or a refusal, says nothing of what this one holds).
   */
  holds(id: string, hash: string, payloadRef: string): boolean {
    return this.db.get("SELECT 1 AS x FROM batches WHERE id = ? AND hash = ? AND payload_ref = ? AND state != 'refused'", [id, hash, payloadRef]) !== undefined
  }

  /** The batch (id, hash): the one a pin naming that pair, or a message carried in it, refers to. */
  byIdHash(id: string, hash: string, tx?: Tx): BatchRecord | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM batches WHERE id = ? AND hash = ?', [id, hash])
    return r && fromRow(r)
  }

  /**
   * A batch by its id alone, where only the id is known (an API path): of the batches that may share an id (v14), the
   * same one on every member holding them (PREFERRED_BATCH), never the first stored. What decides a pin's messages
   * reads byIdHash; this member's own batch is `local`.
   */
  get(id: string, tx?: Tx): BatchRecord | undefined {
    const r = (tx ?? this.db).get<Row>(`${PREFERRED_BATCHES} WHERE b.id = ?) AS c ${PREFERRED_ORDER} LIMIT 1`, [id])
    return r && fromRow(r)
  }

  /** This member's own batch `id` (one row per id: v14's batches_local). */
  local(id: string, tx?: Tx): BatchRecord | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM batches WHERE id = ? AND local = 1', [id])
    return r && fromRow(r)
  }

  /**
   * The batch `id` that carries message (`messageId`, `messageHash`) (its manifest names both): of the batches that may
   * share an id, the one a message's own `batch` means; of two carrying the same message, the one `get` prefers.
   */
  carrying(id: string, messageId: string, messageHash: string, tx?: Tx): BatchRecord | undefined {
    // A manifest lists each message as {"id":"…","hash":"…","topics":n} (core/hashes.ts batchManifest).
    const entry = `"id":"${messageId}","hash":"${messageHash}"`
    const r = (tx ?? this.db).get<Row>(`${PREFERRED_BATCHES} WHERE b.id = ? AND instr(b.manifest, ?) > 0) AS c ${PREFERRED_ORDER} LIMIT 1`, [id, entry])
    return r && fromRow(r)
  }

  /**
   * A refusal recorded for (id, hash) gives way to the batch itself, once one of its pins brings a payload that
   * verifies or a peer delivers it as a private batch: the refusal concerned one pin event's payload, not the pair
   * (`held` is then marked by the insert's trigger).
   */
  dropRefused(tx: Tx, id: string, hash: string): void {
    tx.write("DELETE FROM batches WHERE id = ? AND hash = ? AND state = 'refused'", [id, hash])
  }

  /** The batch that carries transaction `txId`: the one stored first, where a peer's forgery names it again. */
  byTxId(txId: string): BatchRecord | undefined {
    const r = this.db.get<Row>('SELECT * FROM batches WHERE tx_id = ? ORDER BY seq LIMIT 1', [txId])
    return r && fromRow(r)
  }

  /**
   * The received batch whose manifest names message `id`, newest first: for a pending message stored before messages
   * kept the batch that brought them (a trace only; it reads manifests until it finds one).
   */
  receivedWith(id: string): BatchRecord | undefined {
    const r = this.db.get<Row>("SELECT * FROM batches WHERE local = 0 AND state = 'received' AND instr(manifest, ?) > 0 ORDER BY seq DESC LIMIT 1", [`"${id}"`])
    return r && fromRow(r)
  }

  /** Our batches not yet pinned, oldest first: what dispatch resumes after a restart. */
  undispatched(): BatchRecord[] {
    return this.db.all<Row>("SELECT * FROM batches WHERE local = 1 AND state IN ('sealed', 'uploaded') ORDER BY seq").map(fromRow)
  }

  /** An unpinned batch's deliveries are queued: it is done here, and never pinned. */
  setSent(tx: Tx, id: BatchId): void {
    tx.write("UPDATE batches SET state = 'sent' WHERE id = ? AND local = 1", [id])
  }

  /**
   * The pin was mined: what it referred to (the payload's content address) is recorded with it, and when the batch was
   * made available and the chain took the pin, where known (for traces).
   */
  setPinned(tx: Tx, id: BatchId, chainTx: string, payloadRef: string, times: { uploaded?: Timestamp; pinSent?: Timestamp } = {}): void {
    tx.write("UPDATE batches SET state = 'pinned', chain_tx = ?, payload_ref = ?, uploaded = ?, pin_sent = ? WHERE id = ? AND local = 1", [chainTx, payloadRef, times.uploaded ?? null, times.pinSent ?? null, id])
  }

  /** Newest first. */
  list(namespace: string, q: CollectionQuery): BatchRecord[] {
    const conds = ['namespace = ?']
    const params: (string | number)[] = [namespace]
    andWhere(conds, params, filterSql(q.filter, BATCH_FIELDS))
    return this.db.all<Row>(`SELECT * FROM batches WHERE ${conds.join(' AND ')} ORDER BY seq DESC LIMIT ? OFFSET ?`, [...params, q.limit, q.skip]).map(fromRow)
  }
}

/**
 * The batches sharing an id, each with the chain sequence of its first deciding pin (one its own key signed for its
 * hash), for PREFERRED_ORDER; the caller closes the inner WHERE and names the result `c`.
 */
const PREFERRED_BATCHES = `SELECT * FROM (SELECT b.*, (SELECT MIN(p.seq) FROM pins p WHERE p.batch_id = b.id AND p.batch_hash = b.hash AND p.signer = b.key) AS first_pin
   FROM batches b`

/**
 * The order of the batches sharing an id in which the first is the one meant by the id alone: not refused, and pinned
 * by its own key (the one pinned first on chain), then this member's own, then by hash, which every member holds alike
 * (never by `seq`, this member's arrival order). The second key is NULL only outside the first class.
 */
const PREFERRED_ORDER = "ORDER BY (state = 'refused'), (first_pin IS NULL), first_pin, local DESC, hash"

function fromRow(r: Row): BatchRecord {
  return {
    id: r.id as BatchId,
    type: r.type as BatchRecord['type'],
    namespace: r.namespace,
    author: r.author,
    key: r.key,
    ...(r.node ? { node: r.node } : {}),
    ...(r.grp ? { group: r.grp as Hash } : {}),
    created: r.created as Timestamp,
    hash: r.hash as Hash,
    manifest: r.manifest,
    txId: r.tx_id as TxId,
    ...(r.payload_ref !== null ? { payloadRef: r.payload_ref } : {}),
    state: r.state as BatchState,
    local: r.local === 1,
    ...(r.chain_tx ? { chainTx: r.chain_tx } : {}),
    ...(r.reason ? { reason: r.reason } : {}),
    ...(r.uploaded ? { uploaded: r.uploaded as Timestamp } : {}),
    ...(r.pin_sent ? { pinSent: r.pin_sent as Timestamp } : {}),
    ...(r.received ? { received: r.received as Timestamp } : {}),
    ...(Number(r.carried) === 1 ? { carried: true } : {}),
  }
}
