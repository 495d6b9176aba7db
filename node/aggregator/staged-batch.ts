import type { Hash } from '../core/ids.js'
import type { Tx } from '../db/database.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { DataRepo } from '../db/repos/data.js'
import type { DecidedRow, MessagesRepo } from '../db/repos/messages.js'
import type { BatchPayload, BatchRecord, Message } from '../model/index.js'
import { heldContents, receivedRows, type HeldContents } from './recent-batches.js'
import { IndexedManifest } from './manifest.js'
import { receivedRecord } from './store-batch.js'

/**
 * Thrown inside the storing transaction when a staged batch's message or data rows turn out to be held here already:
 * what was decided assumed they were all new, so the transaction is abandoned and the batch stored the other way
 * (storeReceivedBatch, then a walk), which settles held rows as it always did. A held message row is found only by its
 * insert, after the walk (a read before it would cost every batch a round trip for what a resent message alone needs):
 * the abandoned walk leaves its events' sequence numbers unused, a gap as any rolled-back transaction leaves
 * (EventsRepo.insertMany), and logs nothing (rejections are logged once their pass commits).
 */
export class HeldAlready extends Error {
  constructor(what: string) {
    super(`a received batch carries ${what} held here already`)
    this.name = 'HeldAlready'
  }
}

/**
 * A received broadcast batch stored in the transaction that then walks its pins (Aggregator.receive), with its message
 * rows not written yet: the walk decides them from these contents, and `write` inserts each row once, as the walk left
 * it. Without this a receiver inserted each message pending and updated it moments later when the walk confirmed it, and
 * that update changes `confirmed_key`, which four list indexes hold: on PostgreSQL a new version of the whole row and an
 * entry in each of the table's indexes, on every receiving member.
 */
export class StagedBatch {
  /** What the walk made of each message, by id (unique in a batch): settled ones only. */
  private readonly settled = new Map<string, DecidedRow>()

  constructor(
    readonly record: BatchRecord,
    /** The messages (pending, in this batch) and data the walk sees, as the database will hold them. */
    readonly contents: HeldContents,
    /** The message rows as storeReceivedBatch would insert them (pending), in batch order. */
    private readonly rows: readonly Message[],
  ) {}

  /** Whether this is batch (id, hash). */
  is(batchId: string, batchHash: Hash): boolean {
    return this.record.id === batchId && this.record.hash === batchHash
  }

  /** The walk confirmed or rejected one of its messages (`as` is the message as decided) by the pin at `pinSeq`. */
  decided(as: Message, pinSeq: number): void {
    this.settled.set(as.header.id, { message: as, pinSeq })
  }

  /**
   * Inserts the batch's messages, each as the walk left it (those it did not decide, pending): nothing updates them
   * after. Throws HeldAlready when one was held already (ON CONFLICT skipped it).
   */
  write(tx: Tx, messages: MessagesRepo): void {
    const rows = this.rows.map((m): DecidedRow => {
      const s = this.settled.get(m.header.id)
      if (s === undefined) return { message: m }
      const { state, confirmed, txid, rejectReason } = s.message
      return { message: { ...m, state, ...(confirmed ? { confirmed } : {}), ...(txid ? { txid } : {}), ...(rejectReason ? { rejectReason } : {}) }, pinSeq: s.pinSeq }
    })
    if (messages.insertDecided(tx, rows) !== rows.length) throw new HeldAlready('messages')
  }
}

/**
 * Stores batch `b`'s record and data in `tx`, leaving its message rows to the walk that follows in the same transaction
 * (StagedBatch), when that walk can decide them from memory: a pinned batch of broadcast messages only (a definition's
 * handler works through the database). Undefined for any other batch, with nothing written. Throws HeldAlready when one
 * of its data items is held here already: such a batch is stored as before (storeReceivedBatch).
 */
export function stageReceivedBatch(deps: { batches: BatchesRepo; data: DataRepo }, tx: Tx, b: BatchPayload, manifest: string, payloadRef: string): StagedBatch | undefined {
  if (b.tx.type !== 'batch_pin' || b.messages.some((m) => m.header.type !== 'broadcast')) return undefined
  const rows = receivedRows(b)
  const record = receivedRecord(b, manifest, payloadRef)
  deps.batches.insert(tx, record)
  if (deps.data.insertMany(tx, rows.data, false) !== rows.data.length) throw new HeldAlready('data')
  // checkBatch wrote `manifest` from these messages in this order: its entries are theirs.
  const indexed = new IndexedManifest(b.messages.map((m) => ({ id: m.header.id, hash: m.hash, topics: m.header.topics.length })))
  return new StagedBatch(record, heldContents(indexed, rows.messages, rows.data), rows.messages)
}
