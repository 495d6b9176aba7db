/**
 * Version 13: what FireFly's `operations` and `transactions` collections answer, and data values published on their own.
 *
 * - `operations`: one row per step this member hands to a plugin (FireFly's Operation): pinning a batch on chain,
 *   uploading a batch, a blob or a value to shared storage, sending a batch or a blob to a peer over the exchange.
 *   `key` names the step (type and what it acts on), so a step prepared again after a restart updates its row rather
 *   than adding one. `input` and `output` are JSON text; `updated` is when the status last changed.
 * - `transactions`: the transactions no batch carries (a `data_publish`, FireFly's transaction of a publish through
 *   `data/{id}/value/publish` or `data/{id}/blob/publish`). A batch's `batch_pin` or `unpinned` transaction is still
 *   read from the batch that carries it.
 * - `data.public`: where the data item's value was published (`data/{id}/value/publish`); its blob's reference stays
 *   `blob_public`.
 */
export const v13Operations = {
  version: 13,
  name: 'operations, transactions without a batch, published data values',
  up: `
    CREATE TABLE operations (
      seq       INTEGER PRIMARY KEY AUTOINCREMENT,
      id        TEXT NOT NULL UNIQUE,
      key       TEXT NOT NULL UNIQUE,
      namespace TEXT NOT NULL,
      tx_id     TEXT,
      type      TEXT NOT NULL,
      plugin    TEXT NOT NULL,
      status    TEXT NOT NULL,
      input     TEXT NOT NULL,
      output    TEXT,
      error     TEXT,
      created   TEXT NOT NULL,
      updated   TEXT NOT NULL
    );
    CREATE INDEX operations_namespace ON operations (namespace, seq);
    CREATE INDEX operations_tx ON operations (tx_id);

    CREATE TABLE transactions (
      seq             INTEGER PRIMARY KEY AUTOINCREMENT,
      id              TEXT NOT NULL UNIQUE,
      namespace       TEXT NOT NULL,
      type            TEXT NOT NULL,
      created         TEXT NOT NULL,
      idempotency_key TEXT
    );
    CREATE UNIQUE INDEX transactions_idempotency ON transactions (namespace, idempotency_key) WHERE idempotency_key IS NOT NULL;

    ALTER TABLE data ADD COLUMN public TEXT;
  `,
}
