import type { Tx } from '../db/database.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { DataRepo } from '../db/repos/data.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import type { Carried } from '../db/repos/carried-messages.js'
import type { BatchRecord, DataRef, Message } from '../model/index.js'
import type { IndexedManifest } from './manifest.js'

/**
 * Once every message a batch lists is decided, what it carried with those held from other batches (carried_messages,
 * store-batch.ts) decides nothing any more: the records go, with the batch's mark (`batches.carried`), and so do the
 * data rows only they named (a message decided by this batch names its rows itself: its row took them). A blob such a
 * row alone referred to is then unreferenced, and goes with the unreferenced-blob sweep. Only a marked batch costs
 * anything here: nearly every batch is all new where it arrives.
 */
export function forgetCarried(
  deps: { batches: BatchesRepo; messages: MessagesRepo; data: DataRepo },
  tx: Tx,
  view: { record: BatchRecord; manifest: IndexedManifest; messages: ReadonlyMap<string, Message> },
  decided: (m: Message) => boolean,
): void {
  if (view.record.carried !== true) return
  for (const e of view.manifest.entries) {
    const m = view.messages.get(e.id)
    if (m === undefined || !decided(m)) return
  }
  const { record } = view
  const records = deps.messages.carried.ofBatch(record.id, record.hash, tx)
  deps.messages.carried.deleteOfBatch(tx, record.id, record.hash)
  deps.batches.markCarried(tx, record.id, record.hash, false)
  deps.data.deleteUnnamed(tx, [...records.values()].flatMap((c) => c.carried.data))
}

/**
 * The message row takes what its deciding batch carried (a further batch of its author: carried_messages). Answers the
 * data references it named before: the caller deletes the received rows among them that nothing names any more
 * (DataRepo.deleteUnnamed), once for every message it decided so, since that reads the namespace's messages. Only a
 * batch that carried such a message decides by this: one read of the row more.
 */
export function takeCarried(deps: { messages: MessagesRepo }, tx: Tx, ref: { id: string; hash: string }, carried: Carried, batchId: string): DataRef[] {
  const before = deps.messages.byRef(ref.id, ref.hash, tx)?.data ?? []
  deps.messages.takeCarried(tx, ref, carried, batchId)
  return before
}
