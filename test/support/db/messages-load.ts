import type { Database, Migration } from '../../../node/db/database.js'

/**
 * A table shaped like the member's messages, for test/db/commit-cost.test.ts and the bench's `db` scenario
 * (scripts/bench/db.ts): rows of about 300 bytes, an indexed topic, a primary key each caller chooses.
 */
export const messagesMigration: Migration = {
  version: 1,
  name: 'messages',
  up: `CREATE TABLE messages (
         id      TEXT PRIMARY KEY,
         author  TEXT NOT NULL,
         topic   TEXT NOT NULL,
         created TEXT NOT NULL,
         hash    TEXT NOT NULL,
         body    TEXT NOT NULL
       );
       CREATE INDEX messages_topic ON messages (topic, created);`,
}

export const INSERT_MESSAGE = 'INSERT INTO messages (id, author, topic, created, hash, body) VALUES (?, ?, ?, ?, ?, ?)'
const BODY = 'b'.repeat(140)

/** Row `i`, about 300 bytes, under the primary key `key`. */
export function messageRow(key: string, i: number): [string, string, string, string, string, string] {
  return [key, `did:firefly:org/org${i % 3}`, `topic-${i % 50}`, new Date(1_700_000_000_000 + i).toISOString(), 'ab'.repeat(32), BODY]
}

/** Inserts rows 0..rows-1, 5,000 to a transaction, row i under `key(i)`. */
export async function fillMessages(db: Database, rows: number, key: (i: number) => string): Promise<void> {
  const perTx = 5000
  for (let i = 0; i < rows; i += perTx) {
    await db.transaction((tx) => {
      for (let j = i; j < Math.min(i + perTx, rows); j++) tx.run(INSERT_MESSAGE, messageRow(key(j), j))
    })
  }
}
