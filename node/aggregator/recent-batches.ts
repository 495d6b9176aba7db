import { extend } from '../core/extend.js'
import { ParleyError } from '../core/errors.js'
import type { BatchId, Hash } from '../core/ids.js'
import { LruMap } from '../core/lru.js'
import { receivedItem, storedData } from '../db/repos/data.js'
import { storedMessage } from '../db/repos/messages.js'
import { refKey } from '../db/repos/ref-key.js'
import type { BatchPayload, BatchRecord, Data, Message } from '../model/index.js'
import { IndexedManifest } from './manifest.js'

/** What the aggregator would read from the database for one batch, as the database holds it. */
export interface HeldContents {
  manifest: IndexedManifest
  /** By id (a batch's message ids are unique: checkBatch). */
  messages: Map<string, Message>
  /** By id and hash (refKey): messages name their data by both, and another data item may share an id. */
  data: Map<string, Data>
}

interface Entry extends HeldContents {
  /** The manifest text: the batch record read at use must carry exactly this one. */
  text: string
  weight: number
}

function keyOf(id: BatchId, hash: Hash): string {
  return `${id}/${hash}`
}

/** What the held batches may weigh together (about their data values' and manifests' text, and a part per message). */
export const RECENT_BATCHES_BYTES = 32 * 1024 * 1024

export interface ReceivedRows {
  messages: Message[]
  data: Data[]
}

/**
 * The rows storeReceivedBatch writes for a received batch: its messages pending with the batch that brought them (as
 * FireFly's validateBatchMessage does: a trace finds a pending message's batch), its data in the batch's namespace,
 * each with the digest of what the batch carried, which the messages' references record: each message is decided by
 * the data its own batch carried, whatever another batch carried under the same id and hash.
 */
export function receivedRows(b: BatchPayload): ReceivedRows {
  // A batch's data ids are unique (checkBatch): a reference finds its item by id.
  const byId = new Map<string, Data>()
  const data = b.data.map((d) => {
    const stored = receivedItem(d, d.namespace || b.namespace)
    byId.set(stored.id, stored)
    return stored
  })
  return {
    messages: b.messages.map((m) => ({
      header: m.header,
      hash: m.hash,
      data: m.data.map((r) => ({ id: r.id, hash: r.hash, digest: carriedDigest(byId, m.header.id, r.id) })),
      state: 'pending' as const,
      batch: b.id,
      ...(m.pins ? { pins: m.pins } : {}),
    })),
    data,
  }
}

/** The digest of the data item `dataId` the batch carries; checkBatch refuses a batch that does not carry one a message names. */
function carriedDigest(byId: ReadonlyMap<string, Data>, messageId: string, dataId: string): Hash {
  const d = byId.get(dataId)
  if (d?.digest === undefined) throw new ParleyError('BAD_PEER_DATA', `message ${messageId} refers to data ${dataId} that the batch does not carry`)
  return d.digest
}

/**
 * Batches stored moments ago, as the database now holds their messages and data: a batch is walked by the aggregator
 * right after it is stored (a received batch: once it is here; one this member sealed: once its pin comes back), and
 * reading back what was just written is a good part of what confirming it costs. Each batch is handed out once, to the
 * first pass that walks it (a later walk reads the database, which is then the truth); only for the batch id, hash and
 * manifest it was stored with (batches sharing an id are held apart, by hash); and only while nothing else can have changed its rows, which holds for messages and
 * data that were new when the batch stored them. Anything else that could (a batch bringing messages held already, a
 * rewind because pins changed by hand) empties the holder. Memory only: after a start the database answers everything.
 */
export class RecentBatches {
  /** By batch id and hash (`keyOf`). */
  private readonly held: LruMap<string, Entry>

  constructor(capacityBytes = RECENT_BATCHES_BYTES) {
    this.held = new LruMap(capacityBytes, (e) => e.weight)
  }

  /**
   * A batch another member sent, with `manifest` as checkBatch wrote it from the batch, stored just now with all of its
   * messages and data new here, as storeReceivedBatch wrote them (messages pending with their batch, data in the
   * batch's namespace). Told in the storing transaction's own synchronous step, so that no other store comes between:
   * should that transaction fail, no batch record carries this hash and manifest, and a later store replaces the entry.
   */
  received(b: BatchPayload, manifest: string, rows: ReceivedRows = receivedRows(b)): void {
    this.forget(b.id, b.hash)
    if (b.tx.type !== 'batch_pin') return
    // checkBatch wrote `manifest` from these messages in this order: its entries are theirs.
    const indexed = new IndexedManifest(b.messages.map((m) => ({ id: m.header.id, hash: m.hash, topics: m.header.topics.length })))
    this.hold(b.id, b.hash, manifest, indexed, rows.messages, rows.data)
  }

  /**
   * A batch this member sealed: `messages` as the seal left their rows (pins included; the batch and transaction ids
   * are set here), `data` as stored. For the batch manager to tell in the seal's transaction, right after it writes
   * them, for the same reason as `received`. An unpinned batch is never walked by the aggregator and is not held.
   */
  sealed(record: Pick<BatchRecord, 'id' | 'hash' | 'manifest' | 'txId'>, messages: readonly Message[], data: readonly Data[]): void {
    this.forget(record.id, record.hash)
    if (messages.some((m) => m.header.txtype !== 'batch_pin')) return
    // Read from the record's own manifest: whatever order the messages are handed in, a pin's index finds its message.
    const indexed = new IndexedManifest(record.manifest)
    const ids = new Set(messages.map((m) => m.header.id as string))
    if (indexed.entries.length !== ids.size || indexed.entries.some((e) => !ids.has(e.id))) return
    this.hold(record.id, record.hash, record.manifest, indexed, messages.map((m) => extend(m, { batch: record.id, txid: record.txId })), data)
  }

  /** The contents of batch (id, hash) stored with exactly this manifest, handed out once; undefined otherwise. */
  take(id: BatchId, hash: Hash, manifest: string): HeldContents | undefined {
    const key = keyOf(id, hash)
    const e = this.held.get(key)
    if (e === undefined) return undefined
    this.held.delete(key)
    if (e.text !== manifest) return undefined
    return { manifest: e.manifest, messages: e.messages, data: e.data }
  }

  /** Batch (id, hash) was stored again, or otherwise than held: the database answers for it. */
  forget(id: BatchId, hash: Hash): void {
    this.held.delete(keyOf(id, hash))
  }

  /** Something may have changed rows of held batches: the database answers from now on. */
  clear(): void {
    this.held.clear()
  }

  get size(): number {
    return this.held.size
  }

  private hold(id: BatchId, hash: Hash, manifest: string, indexed: IndexedManifest, messages: readonly Message[], data: readonly Data[]): void {
    // A blob with no shared-storage reference yet may get one (the sender publishes it), changing its data row.
    if (data.some((d) => d.blob && !d.blob.public) && messages.some((m) => m.header.type !== 'private' && m.header.type !== 'groupinit')) return
    const held = heldContents(indexed, messages, data)
    // The pass would read every data item its messages name; one missing here would make it wait, a read would not.
    if (messages.some((m) => m.data.some((r) => !held.data.has(refKey(r))))) return
    const weight = manifest.length + 200 * held.data.size + [...held.data.values()].reduce((n, d) => n + (d.value?.length ?? 0), 0) + 600 * held.messages.size
    this.held.set(keyOf(id, hash), { text: manifest, ...held, weight })
  }
}

/**
 * A batch's messages and data as the database holds them once stored (messages by id, data by refKey), each text its
 * own: what the aggregator would read back for the batch.
 */
export function heldContents(manifest: IndexedManifest, messages: readonly Message[], data: readonly Data[]): HeldContents {
  const heldData = new Map<string, Data>()
  for (const d of data) {
    const s = storedData(d)
    heldData.set(refKey(s), s)
  }
  const heldMessages = new Map<string, Message>()
  for (const m of messages) {
    const s = ownTexts(storedMessage(m))
    heldMessages.set(s.header.id, s)
  }
  return { manifest, messages: heldMessages, data: heldData }
}

/**
 * A copy of `s` that does not keep alive the text it was cut from: V8 makes a substring of 13 characters or more a
 * view of its whole parent (a parsed batch payload, up to megabytes), and a confirmed message outlives its pass in the
 * settled-message cache (MessagesRepo.remember). Appending flattens into a new string of its own; the slice views that.
 */
function own<T extends string | undefined>(s: T): T {
  return s === undefined || s.length < 13 ? s : ((s + ' ').slice(0, -1) as T)
}

/** The message with every text its own (see `own`), in place: storedMessage built it just now. */
function ownTexts(m: Message): Message {
  const h = m.header as { -readonly [K in keyof Message['header']]: Message['header'][K] }
  h.id = own(h.id)
  if (h.cid) h.cid = own(h.cid)
  h.author = own(h.author)
  h.key = own(h.key)
  h.created = own(h.created)
  h.namespace = own(h.namespace)
  if (h.group) h.group = own(h.group)
  h.topics = h.topics.map((t) => own(t))
  if (h.tag) h.tag = own(h.tag)
  h.datahash = own(h.datahash)
  m.hash = own(m.hash)
  // storedMessage made the references too. A digest is computed here (receivedRows), never cut from a payload: it is
  // its own already.
  for (const r of m.data) {
    r.id = own(r.id)
    r.hash = own(r.hash)
  }
  if (m.pins) m.pins = m.pins.map((p) => own(p))
  if (m.batch) m.batch = own(m.batch)
  if (m.txid) m.txid = own(m.txid)
  if (m.idempotencyKey) m.idempotencyKey = own(m.idempotencyKey)
  return m
}
