/**
 * Version 18: messages and data known by (id, hash). Ids are chosen by senders: a member may send a message or a data
 * item under an id another member already used, with other content. Refusing its batch made the verdict follow the
 * order batches arrived in; stored beside the first, each (id, hash) is decided on its own (docs/architecture.md).
 *
 * - `messages` is rebuilt unique on (id, hash); this member's own messages keep one row per id (`messages_local`).
 *   Every index it had at version 17 is recreated as that version (or 12, or 2) wrote it: the list plans name them.
 * - `messages.pin_seq`: the chain sequence of the first pin that decided a confirmed pinned message, which orders the
 *   confirmed rows sharing an id for a read by id alone. A message confirmed before this version gets its batch's
 *   first deciding pin: a batch's pins are one BatchPin event's, consecutive, so against any row of another batch it
 *   orders exactly as its own first pin would (rows sharing an id are never in one batch, and before this version
 *   none shared an id). Each stored batch's first deciding pin is found once, into a scratch table dropped here, and
 *   a message takes its batch's; only when several stored batches share the id is the manifest searched for its hash.
 * - `data` is rebuilt unique on (id, hash); a message names its data by both. Its indexes of versions 2 and 3 are
 *   recreated. `data.local`: this member's own item (uploaded or sent here), one row per id (`data_local`), which a
 *   send naming data by id, a publication and a deletion act on. A row held before this version is this member's own
 *   when one of its own messages carries it (by id and hash) or none does, else a peer's (data arrives only with its
 *   message). The (id, hash) pairs messages carry are read once, into an indexed scratch table dropped here.
 * - `events.reference_hash`: the hash of the message a message event's verdict was about, since its id alone may
 *   name two rows.
 *
 * Rows are copied with their sequences, so every cursor and order stays as it was.
 */
export const v18MessagesPerHash = {
  version: 18,
  name: 'messages and data unique per (id, hash); pin of a verdict; hash of an event reference',
  up: `
    CREATE TABLE messages_v18 (
      seq             INTEGER PRIMARY KEY AUTOINCREMENT,
      id              TEXT NOT NULL,
      namespace       TEXT NOT NULL,
      type            TEXT NOT NULL,
      txtype          TEXT NOT NULL,
      author          TEXT NOT NULL,
      key             TEXT NOT NULL,
      cid             TEXT,
      created         TEXT NOT NULL,
      created_key     TEXT NOT NULL,
      grp             TEXT,
      topics          TEXT NOT NULL,
      tag             TEXT,
      datahash        TEXT NOT NULL,
      hash            TEXT NOT NULL,
      data            TEXT NOT NULL,
      state           TEXT NOT NULL,
      local           INTEGER NOT NULL,
      batch_id        TEXT,
      tx_id           TEXT,
      confirmed       TEXT,
      confirmed_key   TEXT,
      reject_reason   TEXT,
      pins            TEXT,
      idempotency_key TEXT,
      pin_seq         INTEGER,
      UNIQUE (id, hash)
    );
    INSERT INTO messages_v18 (seq, id, namespace, type, txtype, author, key, cid, created, created_key, grp, topics, tag, datahash, hash, data, state, local, batch_id, tx_id, confirmed, confirmed_key, reject_reason, pins, idempotency_key)
      SELECT seq, id, namespace, type, txtype, author, key, cid, created, created_key, grp, topics, tag, datahash, hash, data, state, local, batch_id, tx_id, confirmed, confirmed_key, reject_reason, pins, idempotency_key FROM messages;
    DROP TABLE messages;
    ALTER TABLE messages_v18 RENAME TO messages;
    CREATE TABLE first_pins_v18 (batch_id TEXT NOT NULL, manifest TEXT NOT NULL, pin_seq INTEGER, shared INTEGER NOT NULL);
    INSERT INTO first_pins_v18 (batch_id, manifest, pin_seq, shared)
      SELECT b.id, b.manifest,
             CASE WHEN b.state != 'refused' THEN (SELECT MIN(p.seq) FROM pins p WHERE p.batch_id = b.id AND p.batch_hash = b.hash AND p.signer = b.key) END,
             (SELECT COUNT(*) FROM batches o WHERE o.id = b.id)
        FROM batches b;
    CREATE INDEX first_pins_v18_batch ON first_pins_v18 (batch_id);
    UPDATE messages SET pin_seq = (
      SELECT MIN(CASE WHEN f.shared = 1 THEN f.pin_seq WHEN instr(f.manifest, messages.hash) > 0 THEN f.pin_seq END)
        FROM first_pins_v18 f WHERE f.batch_id = messages.batch_id
    ) WHERE state = 'confirmed' AND txtype = 'batch_pin';
    DROP TABLE first_pins_v18;
    CREATE UNIQUE INDEX messages_local ON messages (id) WHERE local = 1;
    CREATE INDEX messages_natural ON messages (namespace, (confirmed_key IS NULL), confirmed_key, created_key, seq);
    CREATE INDEX messages_topics ON messages (namespace, (REPLACE(REPLACE(REPLACE(topics, '["', ''), '"]', ''), '","', ',')), (confirmed_key IS NULL), confirmed_key, created_key, seq);
    CREATE INDEX messages_cid ON messages (namespace, cid, (confirmed_key IS NULL), confirmed_key, created_key, seq) WHERE cid IS NOT NULL;
    CREATE INDEX messages_group ON messages (namespace, grp, (confirmed_key IS NULL), confirmed_key, created_key, seq) WHERE grp IS NOT NULL;
    CREATE UNIQUE INDEX messages_idempotency ON messages (namespace, idempotency_key) WHERE idempotency_key IS NOT NULL;
    CREATE INDEX messages_unbatched ON messages (seq) WHERE local = 1 AND batch_id IS NULL;
    CREATE INDEX messages_group_type ON messages (grp, type) WHERE grp IS NOT NULL;

    CREATE TABLE data_v18 (
      seq              INTEGER PRIMARY KEY AUTOINCREMENT,
      id               TEXT NOT NULL,
      namespace        TEXT NOT NULL,
      validator        TEXT NOT NULL,
      datatype_name    TEXT,
      datatype_version TEXT,
      hash             TEXT NOT NULL,
      value            TEXT,
      created          TEXT NOT NULL,
      blob_hash        TEXT,
      blob_size        INTEGER,
      blob_name        TEXT,
      blob_public      TEXT,
      public           TEXT,
      local            INTEGER NOT NULL,
      UNIQUE (id, hash)
    );
    CREATE TABLE carried_v18 (id TEXT NOT NULL, hash TEXT NOT NULL, own INTEGER NOT NULL);
    INSERT INTO carried_v18 (id, hash, own)
      SELECT json_extract(j.value, '$.id'), json_extract(j.value, '$.hash'), m.local FROM messages m, json_each(m.data) j;
    CREATE INDEX carried_v18_ref ON carried_v18 (id, hash, own);
    INSERT INTO data_v18 (seq, id, namespace, validator, datatype_name, datatype_version, hash, value, created, blob_hash, blob_size, blob_name, blob_public, public, local)
      SELECT seq, id, namespace, validator, datatype_name, datatype_version, hash, value, created, blob_hash, blob_size, blob_name, blob_public, public,
             CASE WHEN EXISTS (SELECT 1 FROM carried_v18 c WHERE c.id = data.id AND c.hash = data.hash AND c.own = 1) THEN 1
                  WHEN EXISTS (SELECT 1 FROM carried_v18 c WHERE c.id = data.id AND c.hash = data.hash) THEN 0 ELSE 1 END
        FROM data;
    DROP TABLE carried_v18;
    DROP TABLE data;
    ALTER TABLE data_v18 RENAME TO data;
    CREATE INDEX data_namespace ON data (namespace, seq);
    CREATE INDEX data_blob ON data (blob_hash) WHERE blob_hash IS NOT NULL;
    CREATE UNIQUE INDEX data_local ON data (id) WHERE local = 1;

    ALTER TABLE events ADD COLUMN reference_hash TEXT;
  `,
}
