import type { Tx } from '../db/database.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import type { DataRepo } from '../db/repos/data.js'
import { ParleyError } from '../core/errors.js'
import { now } from '../core/time.js'
import { receivedRows, type RecentBatches } from './recent-batches.js'
import type { BatchPayload, Message } from '../model/index.js'

/**
 * Stores a verified batch another member sent (downloaded from shared storage, or delivered over the exchange): the
 * batch as `received` (with when), its data, and its messages as `pending` (with their batch), in the caller's
 * transaction. Storing the same batch again changes nothing stored (every insert skips what is there; the in-memory
 * holder of recent batches is emptied).
 *
 * Ids are chosen by senders, so a batch must not stand for a message or data item this node holds with other content:
 * then it throws BAD_PEER_DATA saying which, after having written into the caller's transaction. The caller must let
 * that error leave its transaction function, which then rolls back whole (a thrown error, unlike a failed statement,
 * does not poison the transaction: caught inside it, the batch's rows would commit). The broadcast fetcher then records
 * the batch as refused; the private receiver refuses the delivery. The
 * rows are inserted first and the held ones read back only when some insert was skipped: a batch all new here, which
 * is nearly every batch, costs no read.
 *
 * Answers undefined when every message was new here (each is now pending, in this batch); else the rows of its
 * messages as they stand now, by id: one held already keeps the state and batch it had, which the caller must not
 * decide again (an unpinned message sent again in another batch of its author was confirmed on its first arrival).
 */
export function storeReceivedBatch(
  deps: { batches: BatchesRepo; messages: MessagesRepo; data: DataRepo; recent?: RecentBatches },
  tx: Tx,
  b: BatchPayload,
  manifest: string,
  payloadRef: string,
): ReadonlyMap<string, Message> | undefined {
  deps.batches.insert(tx, {
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
  })
  const rows = receivedRows(b)
  const newData = deps.data.insertMany(tx, rows.data)
  const newMessages = deps.messages.insertMany(tx, rows.messages, false)
  if (newData === rows.data.length && newMessages === rows.messages.length) {
    // Handed to the aggregator in memory, here in the same synchronous step as the inserts, so that no store of
    // another batch can come between them.
    deps.recent?.received(b, manifest, rows)
    return undefined
  }
  // Some rows were held already: each id now has what was there first, which must be what this batch carries.
  const heldData = deps.data.byIds(
    b.data.map((d) => d.id),
    tx,
  )
  for (const d of b.data) {
    const held = heldData.get(d.id)
    if (held && held.hash !== d.hash) throw new ParleyError('BAD_PEER_DATA', `data ${d.id} is already held with hash ${held.hash}, the batch carries ${d.hash}`)
  }
  const heldMessages = deps.messages.getMany(
    b.messages.map((m) => m.header.id),
    tx,
  )
  for (const m of b.messages) {
    const held = heldMessages.get(m.header.id)
    if (held && held.hash !== m.hash) throw new ParleyError('BAD_PEER_DATA', `message ${m.header.id} is already held with hash ${held.hash}, the batch carries ${m.hash}`)
  }
  // Rows held already keep what they hold (and other batches may settle them): what the holder has may be stale.
  deps.recent?.clear()
  return heldMessages
}
