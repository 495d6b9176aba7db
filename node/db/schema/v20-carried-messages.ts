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
}
