import type { Tx } from '../db/database.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import { refKey } from '../db/repos/ref-key.js'
import { sameCarried, type CarriedMessage } from '../db/repos/carried-messages.js'
import type { DataRepo } from '../db/repos/data.js'
import { now } from '../core/time.js'
import { receivedRows, type RecentBatches } from './recent-batches.js'
import type { BatchPayload, BatchRecord, Message } from '../model/index.js'

/**
 * Stores a verified batch another member sent (downloaded from shared storage, or delivered over the exchange): the
 * batch as `received` (with when), its data, and its messages as `pending` (with their batch), in the caller's
 * transaction. Storing the same batch again changes nothing stored (every insert skips what is there; the in-memory
 * holder of recent batches is emptied).
 *
 * Ids are chosen by senders: a message or data item under an id held here with other content (another hash) is stored
 * beside it, not refused, so that which of the two arrived first decides nothing; the aggregator decides each on its
 * own (pass.ts), whatever else shares its id. Messages are known by (id, hash), data items by (id, hash, digest of
 * what the batch carried with them: recent-batches.ts receivedRows): one held already is the same content, and is
 * kept as it is. A message's hash does not cover what its batch carries with it (its data items' other fields, its
 * pins): what a batch carried with a message held pending from another batch is recorded beside it (schema v20), and
 * the pass deciding the message by this batch's pin reads that (pass.ts viewOf). The rows are inserted first and the
 * held ones read back only when some insert was skipped: a batch all new here, which is nearly every batch, costs no
 * read.
 *
 * Answers undefined when every message was new here (each is now pending, in this batch); else the rows of its
 * messages as they stand now, by id (a batch's ids are unique: checkBatch): one held already keeps the state and batch
 * it had, which the caller must not decide again (an unpinned message sent again in another batch of its author was
 * confirmed on its first arrival).
 */
export function storeReceivedBatch(
  deps: { batches: BatchesRepo; messages: MessagesRepo; data: DataRepo; recent?: RecentBatches },
  tx: Tx,
  b: BatchPayload,
  manifest: string,
  payloadRef: string,
): ReadonlyMap<string, Message> | undefined {
  deps.batches.insert(tx, receivedRecord(b, manifest, payloadRef))
  const rows = receivedRows(b)
  const newMessages = deps.messages.insertMany(tx, rows.messages, false)
  if (newMessages === rows.messages.length && deps.data.insertMany(tx, rows.data, false) === rows.data.length) {
    // Handed to the aggregator in memory, here in the same synchronous step as the inserts, so that no store of
    // another batch can come between them.
    deps.recent?.received(b, manifest, rows)
    return undefined
  }
  // Rows held already keep what they hold (and other batches may settle them): what the holder has may be stale.
  deps.recent?.clear()
  const held = deps.messages.byRefs(
    b.messages.map((m) => ({ id: m.header.id, hash: m.hash })),
    tx,
  )
  if (newMessages !== rows.messages.length) {
    // This batch decides nothing of a message decided already: what it carried with one is not stored (no message
    // would name those rows, and nothing would ever delete them). The others' data, pending here, is.
    const needed = new Set(rows.messages.flatMap((m) => (held.get(refKey({ id: m.header.id, hash: m.hash }))?.state === 'pending' ? m.data.map(refKey) : [])))
    deps.data.insertMany(tx, rows.data.filter((d) => needed.has(refKey(d))), false)
  }
  const carried: CarriedMessage[] = []
  const out = new Map<string, Message>()
  for (const m of rows.messages) {
    const row = held.get(refKey({ id: m.header.id, hash: m.hash }))
    if (!row) continue
    out.set(m.header.id, row)
    // Held pending from another batch of its author (or from this batch id with other contents): what this batch
    // carried is kept beside it, for when this batch's pin decides the message.
    if (row.state === 'pending' && !(row.batch === b.id && sameCarried(row, m))) {
      carried.push({ batchId: b.id, batchHash: b.hash, id: m.header.id, hash: m.hash, carried: m.pins ? { data: m.data, pins: m.pins } : { data: m.data } })
    }
  }
  if (carried.length > 0) {
    deps.messages.carried.insertMany(tx, carried)
    deps.batches.markCarried(tx, b.id, b.hash)
  }
  return out
}

/** The record of a batch another member sent, as stored on its arrival: `received`, now. */
export function receivedRecord(b: BatchPayload, manifest: string, payloadRef: string): BatchRecord {
  return {
    id: b.id,
    type: b.type,
    namespace: b.namespace,
    author: b.author,
    key: b.key,
    ...(b.node ? { node: b.node } : {}),
    ...(b.group ? { group: b.group } : {}),
    created: b.created,
    hash: b.hash,
    manifest,
    txId: b.tx.id,
    payloadRef,
    state: 'received',
    local: false,
    received: now(),
  }
}
