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
 *   decided by the own item's fields rather than by what its batch carried; and a received batch that listed a message
 *   pending from another batch kept no record of what it carried. Those broadcast batches' records are deleted, by id
 *   and hash (another batch may share the id): the fetcher downloads each again at the start (its pins wait for it
 *   meanwhile), stores the items as that batch carried them, and records them beside the message. A private batch
 *   cannot be fetched again: docs/architecture.md names that residual.
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

/** Batches read per statement while looking for those that list a pending message. */
const PAGE = 1000

function refetchBatchesOfOwnItems(tx: Tx): void {
  // Pending broadcast messages by (id, hash): the batch id their row came from, and whether a reference of theirs
  // names an own item (no digest).
  const pending = new Map<string, { batchId: string; own: boolean }>()
  const rows = tx.all<{ id: string; hash: string; batch_id: string; data: string }>(
    "SELECT id, hash, batch_id, data FROM messages WHERE local = 0 AND state = 'pending' AND batch_id IS NOT NULL AND type NOT IN ('private', 'groupinit') AND data != '[]'",
  )
  for (const m of rows) pending.set(`${m.id}/${m.hash}`, { batchId: m.batch_id, own: (JSON.parse(m.data) as { digest?: string }[]).some((r) => r.digest === undefined) })
  if (pending.size === 0) return
  // The received broadcast batches listing each (one pass over them, by seq).
  const listers = new Map<string, { id: string; hash: string }[]>()
  for (let after = 0; ; ) {
    const page = tx.all<{ seq: number; id: string; hash: string; manifest: string }>(
      "SELECT seq, id, hash, manifest FROM batches WHERE seq > ? AND local = 0 AND type = 'broadcast' AND state = 'received' ORDER BY seq LIMIT ?",
      [after, PAGE],
    )
    for (const b of page) {
      for (const e of (JSON.parse(b.manifest) as { messages: { id: string; hash: string }[] }).messages) {
        const key = `${e.id}/${e.hash}`
        if (pending.has(key)) listers.set(key, [...(listers.get(key) ?? []), { id: b.id, hash: b.hash }])
      }
    }
    if (page.length < PAGE) break
    after = Number(page[page.length - 1]!.seq)
  }
  // Fetched again and stored, such a batch is read as it carried the message: the one whose row names an own item;
  // one that listed the message while its row came from another batch (no record of what it carried was kept before
  // this version); and each of two under the row's batch id, which one the row holds being unknown.
  const refetch = new Map<string, { id: string; hash: string }>()
  for (const [key, list] of listers) {
    const m = pending.get(key)!
    const same = list.filter((b) => b.id === m.batchId)
    for (const b of list) {
      if (b.id !== m.batchId || m.own || same.length > 1) refetch.set(`${b.id}/${b.hash}`, b)
    }
  }
  for (const b of refetch.values()) tx.run("DELETE FROM batches WHERE id = ? AND hash = ? AND local = 0 AND type = 'broadcast' AND state = 'received'", [b.id, b.hash])
}
