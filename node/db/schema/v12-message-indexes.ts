/**
 * Version 12: a message costs fewer index entries. Every member inserts a row per message and updates it when its batch
 * is sealed (the sender) and when it is confirmed (setting its batch again), and each index whose columns such a
 * statement sets had its entry taken out and put back.
 *
 * - `messages_unbatched` indexes only what it is read for, this member's messages no batch holds yet (the batch
 *   manager's queue at a start), on seq; it was `(local, batch_id, seq)` over every message, received ones included.
 *   A message leaves it when its batch is sealed, and a received one never enters it.
 * - `messages_group_type` indexes only messages of a group; a broadcast has none. Its readers look a group up
 *   (`grp = ?`), which implies the index's condition.
 */
export const v12MessageIndexes = {
  version: 12,
  name: 'messages: partial indexes of unbatched messages and of group messages',
  up: `
    DROP INDEX messages_unbatched;
    DROP INDEX messages_group_type;
    CREATE INDEX messages_unbatched ON messages (seq) WHERE local = 1 AND batch_id IS NULL;
    CREATE INDEX messages_group_type ON messages (grp, type) WHERE grp IS NOT NULL;
  `,
}
