/**
 * Version 6: private messaging's delivery and ordering state.
 *
 * - `deliveries`: one row per (private batch, peer node) this member must deliver the batch to over the exchange.
 *   `state` is `pending` until the peer acknowledged (`done`) or refused it for good (`failed`, with `reason`);
 *   `attempts` and `next_at` (epoch ms) pace the retries. Rows are added when the batch is first prepared and read
 *   again at start, so deliveries resume after a restart (at least once: the receiver deduplicates).
 * - `nextpins`: the receiver's side of masked ordering (FireFly's `nextpins`): for each private context
 *   (sha256(topic || group)) and author DID, the next nonce this member expects to confirm.
 */
export const v6Private = {
  version: 6,
  name: 'private messaging: delivery queue and next expected pins',
  up: `
    CREATE TABLE deliveries (
      batch_id  TEXT NOT NULL,
      peer      TEXT NOT NULL,
      state     TEXT NOT NULL,
      attempts  INTEGER NOT NULL DEFAULT 0,
      next_at   INTEGER NOT NULL DEFAULT 0,
      reason    TEXT,
      created   TEXT NOT NULL,
      PRIMARY KEY (batch_id, peer)
    );
    CREATE INDEX deliveries_pending ON deliveries (state, next_at);

    CREATE TABLE nextpins (
      context TEXT NOT NULL,
      author  TEXT NOT NULL,
      nonce   INTEGER NOT NULL,
      PRIMARY KEY (context, author)
    );

    -- A private batch arriving before its group is known looks for the group's groupinit among the messages.
    CREATE INDEX messages_group_type ON messages (grp, type);
  `,
}
