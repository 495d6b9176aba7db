/**
 * Version 5: private groups and the sender's pin nonces.
 *
 * - `groups`: one row per group this member is in (a member stores no other), keyed by its hash, which already covers
 *   its namespace. `members` is the sorted member list exactly as the hash covers it (JSON), for answering queries.
 * - `group_members`: the same members one row each, so that "the groups this org (or node) is in" is one indexed query.
 * - `nonces`: the next private-pin nonce of each (topic, group, author DID), keyed by core/hashes `nonceKey`; the
 *   batch manager allocates from it when it seals a private batch, in the sealing transaction.
 */
export const v5Groups = {
  version: 5,
  name: 'groups: private groups, their members, private pin nonces',
  up: `
    CREATE TABLE groups (
      seq        INTEGER PRIMARY KEY AUTOINCREMENT,
      hash       TEXT NOT NULL UNIQUE,
      namespace  TEXT NOT NULL,
      name       TEXT NOT NULL,
      members    TEXT NOT NULL,
      message_id TEXT,
      created    TEXT NOT NULL
    );
    CREATE INDEX groups_namespace ON groups (namespace, seq);

    CREATE TABLE group_members (
      grp      TEXT NOT NULL,
      idx      INTEGER NOT NULL,
      identity TEXT NOT NULL,
      node     TEXT NOT NULL,
      PRIMARY KEY (grp, idx)
    );
    CREATE INDEX group_members_identity ON group_members (identity, grp);
    CREATE INDEX group_members_node ON group_members (node, grp);

    CREATE TABLE nonces (
      hash TEXT PRIMARY KEY,
      next INTEGER NOT NULL
    );
  `,
}
