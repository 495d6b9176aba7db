import type { Tx } from '../db/database.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import type { DataRepo } from '../db/repos/data.js'
import { now } from '../core/time.js'
import { receivedRows, type RecentBatches } from './recent-batches.js'
import type { BatchPayload } from '../model/index.js'

/**
 * Stores a verified batch another member sent (downloaded from shared storage, or delivered over the exchange): the
 * batch as `received` (with when), its data, and its messages as `pending` (with their batch), in the caller's transaction. Answers why it cannot be
 * stored (an id this node holds with other content), or undefined once stored; storing the same batch again is a
 * no-op (every insert skips what is there).
 */
export function storeReceivedBatch(
  deps: { batches: BatchesRepo; messages: MessagesRepo; data: DataRepo; recent?: RecentBatches },
  tx: Tx,
  b: BatchPayload,
  manifest: string,
  payloadRef: string,
): string | undefined {
  // Ids are chosen by senders: a batch must not stand for a message or data item this node holds with other content.
  const heldData = deps.data.byIds(
    b.data.map((d) => d.id),
    tx,
  )
  for (const d of b.data) {
    const held = heldData.get(d.id)
    if (held && held.hash !== d.hash) return `data ${d.id} is already held with hash ${held.hash}, the batch carries ${d.hash}`
  }
  const heldMessages = deps.messages.getMany(
    b.messages.map((m) => m.header.id),
    tx,
  )
  for (const m of b.messages) {
    const held = heldMessages.get(m.header.id)
    if (held && held.hash !== m.hash) return `message ${m.header.id} is already held with hash ${held.hash}, the batch carries ${m.hash}`
  }
  // Rows held already keep what they hold (and other batches may settle them): what the holder has may be stale.
  const fresh = heldData.size === 0 && heldMessages.size === 0
  if (!fresh) deps.recent?.clear()
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
  deps.data.insertMany(tx, rows.data)
  deps.messages.insertMany(tx, rows.messages, false)
  // Handed to the aggregator in memory when every row is new (the holder was cleared above otherwise), here in the
  // same synchronous step as the inserts, so that no store of another batch can come between them.
  if (fresh) deps.recent?.received(b, manifest, rows)
  return undefined
}
