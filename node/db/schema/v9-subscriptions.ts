/**
 * Version 9: durable subscriptions and their delivery positions.
 *
 * - `subscriptions`: one row per durable subscription, its name unique in its namespace. `filter` and
 *   `options` are JSON text as the node normalised them (the nested filter form; `options.firstEvent` locked in at
 *   creation as a sequence number, FireFly's form). `seq` orders listings: newest first, stable across restarts.
 * - `offsets`: per subscription, `current` = the highest event sequence up to which every event the subscription
 *   matched has been acknowledged (FireFly's `offsets` table, type `subscription`). Delivery resumes after it.
 *   Written with the subscription and deleted with it; a replaced (PUT) subscription keeps its row.
 * - `batches_tx`: events delivered with their transaction look batches up by transaction id, a page at a time.
 */
export const v9Subscriptions = {
  version: 9,
  name: 'subscriptions: durable subscriptions and their offsets; batches by transaction',
  up: `
    CREATE TABLE subscriptions (
      seq       INTEGER PRIMARY KEY AUTOINCREMENT,
      id        TEXT NOT NULL UNIQUE,
      namespace TEXT NOT NULL,
      name      TEXT NOT NULL,
      transport TEXT NOT NULL,
      filter    TEXT NOT NULL,
      options   TEXT NOT NULL,
      created   TEXT NOT NULL,
      updated   TEXT,
      UNIQUE (namespace, name)
    );
    CREATE INDEX subscriptions_namespace ON subscriptions (namespace, seq);

    CREATE TABLE offsets (
      subscription TEXT PRIMARY KEY,
      current      INTEGER NOT NULL
    );

    CREATE INDEX batches_tx ON batches (tx_id);
  `,
}
