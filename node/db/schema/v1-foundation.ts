/**
 * Version 1: what the node needs to follow the chain. Later versions add messages, data, batches, pins,
 * identities, groups, events and subscriptions. Every write is deterministic (values come from parameters)
 * because the journal replays statements.
 */
export const v1Foundation = {
  version: 1,
  name: 'foundation: chain cursor and BatchPin events',
  up: `
    CREATE TABLE node_state (
      key   TEXT PRIMARY KEY,
      value TEXT NOT NULL
    );

    -- One row per BatchPin log, in chain order; seq is the order the node received them.
    CREATE TABLE blockchain_events (
      seq          INTEGER PRIMARY KEY AUTOINCREMENT,
      id           TEXT NOT NULL UNIQUE,
      protocol_id  TEXT NOT NULL UNIQUE,
      block_number INTEGER NOT NULL,
      tx_index     INTEGER NOT NULL,
      log_index    INTEGER NOT NULL,
      tx_hash      TEXT NOT NULL,
      author       TEXT NOT NULL,
      timestamp    INTEGER NOT NULL,
      action       TEXT NOT NULL,
      tx_id        TEXT NOT NULL,
      batch_id     TEXT NOT NULL,
      batch_hash   TEXT NOT NULL,
      payload_ref  TEXT NOT NULL,
      contexts     TEXT NOT NULL,
      received     TEXT NOT NULL
    );
    CREATE INDEX blockchain_events_batch ON blockchain_events (batch_id);
  `,
}
