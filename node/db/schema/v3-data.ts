/**
 * Version 3: data. Datatypes confirmed through the chain, and the blobs this node holds. A blob is stored once
 * by content hash however many data items refer to it; a row here means the file is complete, verified and
 * fsynced. `data.blob_problem` records why a blob announced by another member can never be obtained (its
 * published content does not match the announced hash or size), so messages naming it are rejected instead
 * of waiting forever.
 */
export const v3Data = {
  version: 3,
  name: 'data: datatypes and held blobs',
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
      UNIQUE (namespace, name, version)
    );
    CREATE INDEX datatypes_namespace ON datatypes (namespace, seq);

    CREATE TABLE blobs (
      seq     INTEGER PRIMARY KEY AUTOINCREMENT,
      hash    TEXT NOT NULL UNIQUE,
      size    INTEGER NOT NULL,
      created TEXT NOT NULL
    );

    ALTER TABLE data ADD COLUMN blob_problem TEXT;
    CREATE INDEX data_blob ON data (blob_hash) WHERE blob_hash IS NOT NULL;
  `,
}
