import type { Tx } from '../types.js'

/**
 * Version 20: a message as each batch of its author carried it. A message's hash covers its header, not what its
 * batch carries with it (its data items' other fields, which the references' digests name, and a private message's
 * pins): its author may send it in two batches that differ there. Its row holds what the first batch stored here
 * carried; `carried_messages` holds what each later batch carried, so that the batch whose pin decides the message
 * decides it by its own contents, on every member, whichever batch arrived first.
 *
 * - `carried_messages`: one row per (batch, message) a batch brought while the message was held already, pending,
 *   from another batch (or from this batch id with other contents): the references (`data`, as a message row holds
 *   them) and `pins` that batch carried. Read per batch (its primary key), and per message (what else carries it)
 *   when a never-pinned private batch is deleted.
 * - Backfill: a pending received message whose reference has no digest names this member's own item of that id and
 *   hash (at version 18 an (id, hash) was one row, and version 19 left such references as they were), so it would be
 *   decided by the own item's fields rather than by what its batch carried. Its broadcast batch's record is deleted:
 *   the fetcher downloads the batch again at the start (its pins wait for it meanwhile), stores the items as that
 *   batch carried them, and records them beside the message. A private batch cannot be fetched again: docs/
 *   architecture.md names that residual.
 */
export const v20CarriedMessages = {
  version: 20,
  name: 'a message as each further batch carried it',
  up: `
    CREATE TABLE carried_messages (
      batch_id     TEXT NOT NULL,
      batch_hash   TEXT NOT NULL,
      message_id   TEXT NOT NULL,
      message_hash TEXT NOT NULL,
      data         TEXT NOT NULL,
      pins         TEXT,
      PRIMARY KEY (batch_id, batch_hash, message_id, message_hash)
    );
    CREATE INDEX carried_messages_message ON carried_messages (message_id, message_hash);
  `,
  backfill: refetchBatchesOfOwnItems,
}

function refetchBatchesOfOwnItems(tx: Tx): void {
  const batches = new Set<string>()
  const pending = tx.all<{ batch_id: string; data: string }>(
    "SELECT batch_id, data FROM messages WHERE local = 0 AND state = 'pending' AND batch_id IS NOT NULL AND type NOT IN ('private', 'groupinit') AND data != '[]'",
  )
  for (const m of pending) {
    if ((JSON.parse(m.data) as { digest?: string }[]).some((r) => r.digest === undefined)) batches.add(m.batch_id)
  }
  for (const id of batches) tx.run("DELETE FROM batches WHERE id = ? AND local = 0 AND type = 'broadcast' AND state = 'received'", [id])
}
