import type { Database, SqlValue, Tx } from '../database.js'
import { andWhere, filterSql } from '../filter-sql.js'
import { MESSAGE_FIELDS } from '../query-fields.js'
import { alsoIn, IN_LIST, inList, insertedCount, insertRows, writeRows } from '../in-list.js'
import { LruMap } from '../../core/lru.js'
import type { BatchId, Hash, MessageId, TxId } from '../../core/ids.js'
import { timestampSortKey, type Timestamp } from '../../core/time.js'
import { CarriedMessages, type Carried } from './carried-messages.js'
import { refKey } from './ref-key.js'
import { type DataRef, type Header, type Message, type MessageQuery, type MessageState, type MessageType, type TxType } from '../../model/index.js'

interface Row {
  seq: number
  id: string
  namespace: string
  type: string
  txtype: string
  author: string
  key: string
  cid: string | null
  created: string
  grp: string | null
  topics: string
  tag: string | null
  datahash: string
  hash: string
  data: string
  state: string
  local: number
  batch_id: string | null
  tx_id: string | null
  confirmed: string | null
  reject_reason: string | null
  pins: string | null
  idempotency_key: string | null
  pin_seq: number | null
  [k: string]: string | number | null
}


/**
 * The memory `getMany` may keep settled messages in (FireFly's `message.cache.size` is 50 MB). Event deliveries read
 * the message of every `message_confirmed` event, and each subscription (and `GET events?fetchreferences`) reads the
 * same ones again. A message with one data reference weighs about 1.9 KB here, with the text its event frames write
 * for it (api/present.ts eventFrameRenderer): some 25,000 such messages.
 */
export const SETTLED_CACHE_BYTES = 48 * 1024 * 1024

/** About what a cached message holds on the heap, with its frame text: a fixed part, and its variable texts twice. */
function settledWeight(m: Message): number {
  return 1400 + 4 * (m.header.topics.join('').length + 100 * m.data.length + (m.pins?.length ?? 0) * 70 + (m.header.tag?.length ?? 0) + (m.rejectReason?.length ?? 0))
}

/** A message as a batch names it: ids are chosen by senders, so only with its hash does it name one row. */
export interface MessageRef {
  id: string
  hash: string
}

/** A message the aggregator confirms, with the chain sequence of its first deciding pin (none for an unpinned one). */
export interface PinnedRef extends MessageRef {
  pinSeq?: number
}

const MESSAGE_INSERT = `INSERT INTO messages (id, namespace, type, txtype, author, key, cid, created, created_key, grp, topics, tag, datahash, hash,
   data, state, local, batch_id, tx_id, confirmed, confirmed_key, pins, idempotency_key)`
const MESSAGE_CONFLICT = 'ON CONFLICT (id, hash) DO NOTHING'
/** MESSAGE_INSERT's columns, then what a verdict records (reject and confirmMany write them over a pending row). */
const DECIDED_INSERT = `${MESSAGE_INSERT.slice(0, -1)}, reject_reason, pin_seq)`

/** A received message as the walk in its batch's storing transaction left it (Aggregator.receive), and its deciding pin. */
export interface DecidedRow {
  message: Message
  /** The chain sequence of its first deciding pin, once confirmed or rejected (what confirmMany and reject record). */
  pinSeq?: number
}

function messageRow(m: Message, local: boolean): SqlValue[] {
  const h = m.header
  return [
    h.id,
    h.namespace,
    h.type,
    h.txtype,
    h.author,
    h.key,
    h.cid ?? null,
    h.created,
    timestampSortKey(h.created),
    h.group ?? null,
    JSON.stringify(h.topics),
    h.tag ?? null,
    h.datahash,
    m.hash,
    JSON.stringify(m.data),
    m.state,
    local ? 1 : 0,
    m.batch ?? null,
    m.txid ?? null,
    m.confirmed ?? null,
    m.confirmed ? timestampSortKey(m.confirmed) : null,
    m.pins ? JSON.stringify(m.pins) : null,
    m.idempotencyKey ?? null,
  ]
}

/**
 * Messages, sent and received; one row per (id, hash), updated in place as they move through their states. A peer may
 * send a message under an id held here with other content: it is kept beside the first, and each is decided on its
 * own. This member's own messages keep one row per id.
 */
export class MessagesRepo {
  /**
   * Messages that reached their last state (confirmed or rejected, in a batch), as read by byRefs outside a
   * transaction, by refKey. Every statement that changes a message row drops its keys first, so an entry is never
   * stale.
   */
  private readonly settled: LruMap<string, Message>
  private changes = 0
  /** What further batches of a message's author carried with it (schema v20). */
  readonly carried: CarriedMessages

  constructor(
    private readonly db: Database,
    settledCacheBytes = SETTLED_CACHE_BYTES,
  ) {
    this.settled = new LruMap(settledCacheBytes, settledWeight)
    this.carried = new CarriedMessages(db)
  }

  /** Its statement may be queued (Tx.write): nothing here reads its result. */
  insert(tx: Tx, m: Message, local: boolean): void {
    writeRows(tx, MESSAGE_INSERT, MESSAGE_CONFLICT, [messageRow(m, local)])
  }

  /**
   * A message held already with the same hash (in two batches, or ours coming back) is kept as it is; one with another
   * hash is stored beside it. Answers how many of `list` were new.
   */
  insertMany(tx: Tx, list: readonly Message[], local: boolean): number {
    return insertedCount(insertRows(tx, MESSAGE_INSERT, MESSAGE_CONFLICT, list.map((m) => messageRow(m, local))))
  }

  /**
   * Received messages written once, as decided in the transaction that stores their batch: pending, or confirmed or
   * rejected with what confirmMany and reject would have written over the pending row. Answers how many were new.
   */
  insertDecided(tx: Tx, list: readonly DecidedRow[]): number {
    this.unsettle(list.map((r) => ({ id: r.message.header.id, hash: r.message.hash })))
    const rows = list.map((r) => [...messageRow(r.message, false), r.message.rejectReason ?? null, r.pinSeq ?? null])
    return insertedCount(insertRows(tx, DECIDED_INSERT, MESSAGE_CONFLICT, rows))
  }

  /**
   * The message a caller naming only `id` means (docs/api.md): the confirmed one if any (of two, the one pinned
   * first), else this member's own, else the first stored. Inside a transaction pass `tx`, so the read sees that
   * transaction's own writes.
   */
  get(id: string, tx?: Tx): Message | undefined {
    const r = (tx ?? this.db).get<Row>(`SELECT * FROM messages WHERE id = ? ORDER BY ${PREFERRED} LIMIT 1`, [id])
    return r && fromRow(r)
  }

  /** This member's own message `id` (one row per id), if any. */
  own(id: string, tx?: Tx): Message | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM messages WHERE id = ? AND local = 1', [id])
    return r && fromRow(r)
  }

  /** The message stored as (id, hash), if any. */
  byRef(id: string, hash: string, tx?: Tx): Message | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM messages WHERE id = ? AND hash = ?', [id, hash])
    return r && fromRow(r)
  }

  /** Every message stored under `id`, first stored first (more than one only when peers reused the id). */
  allWithId(id: string): Message[] {
    return this.db.all<Row>('SELECT * FROM messages WHERE id = ? ORDER BY seq', [id]).map(fromRow)
  }

  /** The messages among `ids` that are held here, by id, each the one `get` would answer (one query per few hundred ids). */
  getMany(ids: readonly string[], tx?: Tx): Map<string, Message> {
    const out = new Map<string, Message>()
    if (ids.length === 0) return out
    for (const r of (tx ?? this.db).all<Row>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE id ${IN_LIST} ORDER BY id, ${PREFERRED}`, [inList(ids)])) {
      if (!out.has(r.id)) out.set(r.id, fromRow(r))
    }
    return out
  }

  /** The messages among `refs` that are held here, by refKey (one query per few hundred refs). */
  byRefs(refs: readonly MessageRef[], tx?: Tx): Map<string, Message> {
    const out = new Map<string, Message>()
    const wanted = new Set<string>()
    // Inside a transaction the rows may be changing (and may yet roll back): read them, keep nothing.
    for (const ref of refs) {
      const key = refKey(ref)
      const m = tx ? undefined : this.settled.get(key)
      if (m) out.set(key, m)
      else wanted.add(key)
    }
    if (wanted.size === 0) return out
    // A message's hash covers its id (its header's hash): every row of these hashes is one of `refs`. The columns a
    // Message is made of, not `*`: event deliveries read a page of messages per page of events, and every column read
    // out of sql.js costs.
    const missing = refs.filter((r) => wanted.has(refKey(r)))
    const rows = (tx ?? this.db).all<Row>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE id ${IN_LIST} AND ${alsoIn('hash')}`, [
      inList(missing.map((r) => r.id)),
      inList(missing.map((r) => r.hash)),
    ])
    for (const r of rows) {
      const key = refKey(r)
      if (!wanted.has(key)) continue
      const m = fromRow(r)
      out.set(key, m)
      if (!tx && isSettled(m)) this.settled.set(key, m)
    }
    return out
  }

  byIdempotencyKey(namespace: string, key: string, tx?: Tx): Message | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM messages WHERE namespace = ? AND idempotency_key = ?', [namespace, key])
    return r && fromRow(r)
  }

  /**
   * This node's accepted messages that no batch holds yet, oldest first (what the batch manager resumes with): an
   * unpinned one is confirmed already, before its batch.
   */
  unbatched(): Message[] {
    return this.db.all<Row>("SELECT * FROM messages WHERE local = 1 AND batch_id IS NULL AND (state = 'ready' OR (state = 'confirmed' AND txtype = 'none')) ORDER BY seq").map(fromRow)
  }

  /** The messages a batch was sealed with (this member's own: one row per id), in one statement. */
  assignBatch(tx: Tx, refs: readonly MessageRef[], batchId: BatchId, txId: TxId): void {
    this.unsettle(refs)
    tx.write(`UPDATE messages SET batch_id = ?, tx_id = ? WHERE local = 1 AND id ${IN_LIST}`, [batchId, txId, inList(refs.map((r) => r.id))])
  }

  /** A groupinit of `group` stored here (pending or settled), if any. */
  groupinitOf(group: string, tx?: Tx): Message | undefined {
    const r = (tx ?? this.db).get<Row>("SELECT * FROM messages WHERE grp = ? AND type = 'groupinit' LIMIT 1", [group])
    return r && fromRow(r)
  }

  /** The private message (or groupinit) of `group` held here that carries the masked pin `pin` (its hash), if any. */
  withPin(group: string, pin: Hash): Message | undefined {
    // Pins are stored as JSON ["<hex>:<nonce>", ...] (a peer's may say 0x<hex>); a hex hash holds no LIKE wildcard.
    const r = this.db.get<Row>("SELECT * FROM messages WHERE grp = ? AND type IN ('private', 'groupinit') AND pins LIKE ? LIMIT 1", [group, `%${pin}:%`])
    return r && fromRow(r)
  }

  /** Records the pins of a batch's private messages (this member's own, allocated when it is sealed), in one statement. */
  setPinsMany(tx: Tx, list: readonly { id: MessageId; hash: Hash; pins: readonly string[] }[]): void {
    if (list.length === 0) return
    this.unsettle(list)
    tx.run(
      `UPDATE messages SET pins = json_extract(p.value, '$[1]')
         FROM (SELECT value FROM json_each(?)) AS p WHERE messages.local = 1 AND messages.id = json_extract(p.value, '$[0]')`,
      [JSON.stringify(list.map((p) => [p.id, p.pins]))],
    )
  }

  /**
   * Confirms several messages of one batch at one time, in one statement, each with the chain sequence of its own
   * first deciding pin (none for an unpinned one): what a read by id alone prefers among confirmed rows (PREFERRED).
   */
  confirmMany(tx: Tx, refs: readonly PinnedRef[], batchId: BatchId, txId: TxId, at: Timestamp): void {
    this.unsettle(refs)
    tx.write(
      `UPDATE messages SET state = 'confirmed', confirmed = ?, confirmed_key = ?, batch_id = ?, tx_id = ?, pin_seq = CAST(json_extract(p.value, '$[2]') AS INTEGER)
         FROM (SELECT value FROM json_each(?)) AS p WHERE messages.id = json_extract(p.value, '$[0]') AND messages.hash = json_extract(p.value, '$[1]')`,
      [at, timestampSortKey(at), batchId, txId, JSON.stringify(refs.map((r) => [r.id, r.hash, r.pinSeq ?? null]))],
    )
  }

  /**
   * A received message now holds what batch `batchId` carried with it (carried-messages.ts): the batch that decided it,
   * so that reads, traces and blob fetches see the data its verdict was reached on; or, its batch deleted, another.
   */
  takeCarried(tx: Tx, ref: MessageRef, carried: Carried, batchId: string): void {
    this.unsettle([ref])
    tx.run('UPDATE messages SET data = ?, pins = ?, batch_id = ? WHERE id = ? AND hash = ? AND local = 0', [
      JSON.stringify(carried.data),
      carried.pins ? JSON.stringify(carried.pins) : null,
      batchId,
      ref.id,
      ref.hash,
    ])
  }

  reject(tx: Tx, ref: MessageRef, batchId: BatchId, txId: TxId, at: Timestamp, reason: string, pinSeq?: number): void {
    this.unsettle([ref])
    tx.run("UPDATE messages SET state = 'rejected', confirmed = ?, confirmed_key = ?, batch_id = ?, tx_id = ?, reject_reason = ?, pin_seq = ? WHERE id = ? AND hash = ?", [
      at,
      timestampSortKey(at),
      batchId,
      txId,
      reason,
      pinSeq ?? null,
      ref.id,
      ref.hash,
    ])
  }

  /** The API's natural order: pending first (newest created first), then confirmed (newest confirmed first). */
  list(q: MessageQuery): Message[] {
    const { sql, params } = messageListQuery(q)
    return this.db.all<Row>(sql, params).map(fromRow)
  }

  /**
   * Counts the statements that changed message rows: a caller that knows what its committed transaction made of
   * some messages hands them to `remember` with the count read at the end of that transaction, and they are kept
   * only if nothing changed a message row since.
   */
  get writes(): number {
    return this.changes
  }

  /**
   * Keeps messages as a committed transaction left them (the aggregator's confirmations and rejections), so that the
   * first event delivery of each reads none of them; `writes` is the count read when that transaction ended.
   */
  remember(list: readonly Message[], writes: number): void {
    if (writes !== this.changes) return
    for (const m of list) if (isSettled(m)) this.settled.set(refKey({ id: m.header.id, hash: m.hash }), m)
  }

  /** Before a statement changes these rows: a settled message read meanwhile is read again. */
  private unsettle(refs: readonly MessageRef[]): void {
    this.changes++
    for (const r of refs) this.settled.delete(refKey(r))
  }

}

/**
 * The statement `list` runs. Its ORDER BY is the order the indexes `messages_natural` and `messages_topics` hold
 * (schema v17), read backwards: a page is their first rows, whatever the number of messages.
 */
export function messageListQuery(q: MessageQuery): { sql: string; params: (string | number)[] } {
  const conds = ['namespace = ?']
  const params: (string | number)[] = [q.namespace]
  if (q.pending === true) conds.push("state IN ('ready', 'pending')")
  if (q.pending === false) conds.push("state = 'confirmed'")
  andWhere(conds, params, filterSql(q.filter, MESSAGE_FIELDS))
  const sql = `SELECT * FROM messages WHERE ${conds.join(' AND ')}
    ORDER BY (confirmed_key IS NULL) DESC, confirmed_key DESC, created_key DESC, seq DESC LIMIT ? OFFSET ?`
  return { sql, params: [...params, q.limit, q.skip] }
}

/** A message in its last state: nothing changes its row any more (an unpinned one still gets its batch). */
function isSettled(m: Message): boolean {
  return (m.state === 'confirmed' || m.state === 'rejected') && m.batch !== undefined
}

/**
 * The message a read of its row answers once `m` is inserted (fromRow of what insertMany writes), without the round
 * trip: held in memory for the aggregator, it must be indistinguishable from the read it saves, key order included.
 */
export function storedMessage(m: Message): Message {
  // Set key by key in fromRow's order rather than spread from optional parts: each spread of a conditional object costs
  // V8 more than the assignment, and this runs for every message a received batch holds.
  const h = m.header
  const header = { id: h.id } as Header
  if (h.cid) header.cid = h.cid
  header.type = h.type
  header.txtype = h.txtype
  header.author = h.author
  header.key = h.key
  header.created = h.created
  header.namespace = h.namespace
  if (h.group) header.group = h.group
  header.topics = [...h.topics]
  if (h.tag) header.tag = h.tag
  header.datahash = h.datahash
  const out = { header, hash: m.hash } as Message
  if (m.batch) out.batch = m.batch
  if (m.txid) out.txid = m.txid
  out.state = m.state
  if (m.confirmed) out.confirmed = m.confirmed
  // insertMany writes no reject reason: only reject() does.
  out.data = m.data.map((r) => (r.digest === undefined ? { id: r.id, hash: r.hash } : { id: r.id, hash: r.hash, digest: r.digest }))
  if (m.pins) out.pins = [...m.pins]
  if (m.idempotencyKey) out.idempotencyKey = m.idempotencyKey
  return out
}

/**
 * The order of the rows sharing an id in which the first is the one meant by the id alone: confirmed and pinned (the
 * one pinned first on chain), confirmed unpinned, this member's own, then the others. The second key is NULL outside
 * the first class, where both engines (which sort NULL apart) then agree. Ties go by hash, which every member holds
 * alike, never by `seq`, which is this member's arrival order.
 */
const PREFERRED =
  "CASE WHEN state = 'confirmed' AND pin_seq IS NOT NULL THEN 0 WHEN state = 'confirmed' THEN 1 WHEN local = 1 THEN 2 ELSE 3 END, CASE WHEN state = 'confirmed' THEN pin_seq END, hash"

/** What `fromRow` reads. */
const MESSAGE_COLUMNS = 'id, cid, type, txtype, author, key, created, namespace, grp, topics, tag, datahash, hash, batch_id, tx_id, state, confirmed, reject_reason, data, pins, idempotency_key'

function fromRow(r: Row): Message {
  const header: Header = {
    id: r.id as MessageId,
    ...(r.cid ? { cid: r.cid as MessageId } : {}),
    type: r.type as MessageType,
    txtype: r.txtype as TxType,
    author: r.author,
    key: r.key,
    created: r.created as Timestamp,
    namespace: r.namespace,
    ...(r.grp ? { group: r.grp as Hash } : {}),
    topics: JSON.parse(r.topics) as string[],
    ...(r.tag ? { tag: r.tag } : {}),
    datahash: r.datahash as Hash,
  }
  return {
    header,
    hash: r.hash as Hash,
    ...(r.batch_id ? { batch: r.batch_id as BatchId } : {}),
    ...(r.tx_id ? { txid: r.tx_id as TxId } : {}),
    state: r.state as MessageState,
    ...(r.confirmed ? { confirmed: r.confirmed as Timestamp } : {}),
    ...(r.reject_reason ? { rejectReason: r.reject_reason } : {}),
    data: JSON.parse(r.data) as DataRef[],
    ...(r.pins ? { pins: JSON.parse(r.pins) as string[] } : {}),
    ...(r.idempotency_key ? { idempotencyKey: r.idempotency_key } : {}),
  }
}
