/**
 * Version 3: data. Datatypes confirmed through the chain, the blobs this node holds, and what it found at each
 * blob reference other members announced.
 *
 * - `datatypes.ordered_at`: the local sequence of the definition's first pin. Pins are stored in chain order, so
 *   a member checks data only against datatypes defined before the message on chain, whatever arrived first.
 * - `blobs`: one row per blob held whole, verified and fsynced (the file is named by its hash), however many data
 *   items refer to it.
 * - `blob_refs`: whether the content at an announced reference is the announced blob (hash and size). A broadcast's
 *   blob counts only once its reference is verified, whatever this node already holds under the same hash, so
 *   every member judges one announcement alike.
 */
export const v3Data = {
  version: 3,
  name: 'data: datatypes, held blobs, verified blob references',
  up: `
    CREATE TABLE datatypes (
      seq        INTEGER PRIMARY KEY AUTOINCREMENT,
      id         TEXT NOT NULL UNIQUE,
      message_id TEXT NOT NULL,
      validator  TEXT NOT NULL,
      namespace  TEXT NOT NULL,
      name       TEXT NOT NULL,
      version    TEXT NOT NULL,
      hash       TEXT NOT NULL,
      value      TEXT NOT NULL,
      created    TEXT NOT NULL,
      ordered_at INTEGER NOT NULL,
      UNIQUE (namespace, name, version)
    );
    CREATE INDEX datatypes_namespace ON datatypes (namespace, seq);

    CREATE TABLE blobs (
      seq     INTEGER PRIMARY KEY AUTOINCREMENT,
      hash    TEXT NOT NULL UNIQUE,
      size    INTEGER NOT NULL,
      created TEXT NOT NULL
    );

    CREATE TABLE blob_refs (
      seq     INTEGER PRIMARY KEY AUTOINCREMENT,
      hash    TEXT NOT NULL,
      size    INTEGER NOT NULL,
      public  TEXT NOT NULL,
      ok      INTEGER NOT NULL,
      reason  TEXT,
      created TEXT NOT NULL,
      UNIQUE (hash, size, public)
    );

    CREATE INDEX data_blob ON data (blob_hash) WHERE blob_hash IS NOT NULL;
  `,
}
