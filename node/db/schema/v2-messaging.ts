/**
 * Version 2: messaging. Messages and their data, the batches that carry them, the pins that order them, the
 * identities that sign them, and the node's event log. Shaped for the whole specification: private groups
 * (group, pins, nonces, next pins) and subscriptions come in later versions but the columns they lean on are here.
 */
export const v2Messaging = {
  version: 2,
  name: 'messaging: messages, data, batches, pins, identities, events',
  up: `
    CREATE TABLE messages (
      seq             INTEGER PRIMARY KEY AUTOINCREMENT,
      id              TEXT NOT NULL UNIQUE,
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
      idempotency_key TEXT
    );
    -- Natural order: pending first by created desc, then confirmed by confirmed desc.
    CREATE INDEX messages_natural ON messages (namespace, confirmed_key, created_key);
    CREATE INDEX messages_unbatched ON messages (local, batch_id, seq);
    CREATE UNIQUE INDEX messages_idempotency ON messages (namespace, idempotency_key) WHERE idempotency_key IS NOT NULL;

    CREATE TABLE data (
      seq              INTEGER PRIMARY KEY AUTOINCREMENT,
      id               TEXT NOT NULL UNIQUE,
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
      blob_path        TEXT,
      blob_public      TEXT
    );
    CREATE INDEX data_namespace ON data (namespace, seq);

    CREATE TABLE batches (
      seq         INTEGER PRIMARY KEY AUTOINCREMENT,
      id          TEXT NOT NULL UNIQUE,
      type        TEXT NOT NULL,
      namespace   TEXT NOT NULL,
      author      TEXT NOT NULL,
      key         TEXT NOT NULL,
      node        TEXT,
      grp         TEXT,
      created     TEXT NOT NULL,
      hash        TEXT NOT NULL,
      manifest    TEXT NOT NULL,
      tx_id       TEXT NOT NULL,
      payload_ref TEXT,
      state       TEXT NOT NULL,
      local       INTEGER NOT NULL,
      chain_tx    TEXT,
      reason      TEXT
    );
    CREATE INDEX batches_state ON batches (local, state, seq);

    -- One row per on-chain context of a batch; the first pin of a (batch, index) wins, a re-pin is ignored.
    CREATE TABLE pins (
      seq         INTEGER PRIMARY KEY AUTOINCREMENT,
      batch_id    TEXT NOT NULL,
      batch_hash  TEXT NOT NULL,
      idx         INTEGER NOT NULL,
      hash        TEXT NOT NULL,
      masked      INTEGER NOT NULL,
      signer      TEXT NOT NULL,
      event_id    TEXT NOT NULL,
      dispatched  INTEGER NOT NULL DEFAULT 0,
      UNIQUE (batch_id, idx)
    );
    CREATE INDEX pins_undispatched ON pins (dispatched, seq);
    CREATE INDEX pins_context ON pins (hash, dispatched, seq);

    CREATE TABLE identities (
      seq         INTEGER PRIMARY KEY AUTOINCREMENT,
      id          TEXT NOT NULL UNIQUE,
      did         TEXT NOT NULL UNIQUE,
      type        TEXT NOT NULL,
      parent      TEXT,
      namespace   TEXT NOT NULL,
      name        TEXT NOT NULL,
      description TEXT,
      profile     TEXT,
      message_id  TEXT NOT NULL,
      created     TEXT NOT NULL,
      updated     TEXT
    );

    CREATE TABLE verifiers (
      seq         INTEGER PRIMARY KEY AUTOINCREMENT,
      identity_id TEXT NOT NULL,
      type        TEXT NOT NULL,
      value       TEXT NOT NULL,
      created     TEXT NOT NULL,
      UNIQUE (type, value)
    );
    CREATE INDEX verifiers_identity ON verifiers (identity_id);

    -- The node's event log: sequence is insertion order, which applications process in.
    CREATE TABLE events (
      seq        INTEGER PRIMARY KEY AUTOINCREMENT,
      id         TEXT NOT NULL UNIQUE,
      type       TEXT NOT NULL,
      namespace  TEXT NOT NULL,
      reference  TEXT NOT NULL,
      correlator TEXT,
      tx         TEXT,
      topic      TEXT,
      created    TEXT NOT NULL
    );
    CREATE INDEX events_namespace ON events (namespace, seq);
  `,
}
