/**
 * Version 14: every pin kept, batches known by (id, hash). Anyone may pin any batch id, and a member may deliver a
 * batch under any id: the first pin or the first batch stored must not decide for the others (DESIGN section 9).
 *
 * - `pins` is rebuilt unique on (batch id, batch hash, signer, index): a pin of another signer, or naming another hash,
 *   is kept beside the honest one instead of displacing it; a retried submission by the same signer is still stored
 *   once. The partial indexes of versions 7 and 11 are recreated as they were.
 * - `batches` is rebuilt unique on (id, hash): a different batch under a known id is kept apart. This member's own
 *   batches keep one row per id (`batches_local`). Its indexes of versions 2 and 9 are recreated.
 * - `held` now means: a batch with the pin's id and hash is stored here and not refused (it was the id alone), and the
 *   trigger of version 7 that marks pins when their batch comes after them matches on both (it went with the table).
 *
 * Rows are copied with their sequences, so the chain order the aggregator walks and every cursor stay as they were.
 */
export const v14PinsPerSigner = {
  version: 14,
  name: 'pins unique per (batch, hash, signer, index); batches unique per (id, hash)',
  up: `
    CREATE TABLE batches_v14 (
      seq         INTEGER PRIMARY KEY AUTOINCREMENT,
      id          TEXT NOT NULL,
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
      reason      TEXT,
      uploaded    TEXT,
      pin_sent    TEXT,
      received    TEXT,
      UNIQUE (id, hash)
    );
    INSERT INTO batches_v14 (seq, id, type, namespace, author, key, node, grp, created, hash, manifest, tx_id, payload_ref, state, local, chain_tx, reason, uploaded, pin_sent, received)
      SELECT seq, id, type, namespace, author, key, node, grp, created, hash, manifest, tx_id, payload_ref, state, local, chain_tx, reason, uploaded, pin_sent, received FROM batches;
    DROP TABLE batches;
    ALTER TABLE batches_v14 RENAME TO batches;
    CREATE INDEX batches_state ON batches (local, state, seq);
    CREATE INDEX batches_tx ON batches (tx_id);
    CREATE UNIQUE INDEX batches_local ON batches (id) WHERE local = 1;

    CREATE TABLE pins_v14 (
      seq         INTEGER PRIMARY KEY AUTOINCREMENT,
      batch_id    TEXT NOT NULL,
      batch_hash  TEXT NOT NULL,
      idx         INTEGER NOT NULL,
      hash        TEXT NOT NULL,
      masked      INTEGER NOT NULL,
      signer      TEXT NOT NULL,
      event_id    TEXT NOT NULL,
      dispatched  INTEGER NOT NULL DEFAULT 0,
      held        INTEGER NOT NULL DEFAULT 0,
      UNIQUE (batch_id, batch_hash, signer, idx)
    );
    INSERT INTO pins_v14 (seq, batch_id, batch_hash, idx, hash, masked, signer, event_id, dispatched, held)
      SELECT p.seq, p.batch_id, p.batch_hash, p.idx, p.hash, p.masked, p.signer, p.event_id, p.dispatched,
             EXISTS (SELECT 1 FROM batches b WHERE b.id = p.batch_id AND b.hash = p.batch_hash AND b.state != 'refused')
        FROM pins p;
    DROP TABLE pins;
    ALTER TABLE pins_v14 RENAME TO pins;
    CREATE INDEX pins_held_waiting ON pins (seq) WHERE dispatched = 0 AND held = 1;
    CREATE INDEX pins_broadcast_waiting ON pins (seq) WHERE dispatched = 0 AND masked = 0;
    CREATE INDEX pins_waiting ON pins (seq) WHERE dispatched = 0;
    CREATE INDEX pins_waiting_context ON pins (hash, seq) WHERE dispatched = 0;
    CREATE INDEX pins_hash ON pins (hash, seq);

    CREATE TRIGGER pins_held_by_batch AFTER INSERT ON batches
    WHEN NEW.state != 'refused'
    BEGIN
      UPDATE pins SET held = 1 WHERE batch_id = NEW.id AND batch_hash = NEW.hash;
    END;
  `,
}
