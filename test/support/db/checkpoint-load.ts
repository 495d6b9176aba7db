import type { Database, Migration } from '../../../node/db/database.js'

/**
 * A checkpoint under load, for test/db/checkpoint-stall.test.ts and the bench's `db` scenario (scripts/bench/db.ts):
 * a database filled to a size, then checkpointed while a loop commits one row after another.
 */
export const rowsMigration: Migration = {
  version: 1,
  name: 'rows',
  up: `CREATE TABLE big (id INTEGER PRIMARY KEY, payload BLOB NOT NULL);
       CREATE TABLE live (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);`,
}

/** Inserts 1,000-byte rows into `big`, `perTx` to a transaction, until the database holds `bytes`; answers the rows. */
export async function fillRows(db: Database, bytes: number, perTx: number): Promise<number> {
  const payload = new Uint8Array(1000).fill(7)
  let id = 0
  while (db.stats().databaseBytes < bytes) {
    await db.transaction((tx) => {
      for (let i = 0; i < perTx; i++) tx.run('INSERT INTO big (id, payload) VALUES (?, ?)', [++id, payload])
    })
  }
  return id
}

/** Runs a checkpoint while a loop commits into `live`: the commits done by the checkpoint's end, and in all. */
export async function checkpointWhileCommitting(db: Database): Promise<{ during: number; committed: number; checkpointMs: number }> {
  let committed = 0
  let stop = false
  const committer = (async (): Promise<void> => {
    for (let n = 0; !stop; n++) {
      await db.transaction((tx) => tx.run('INSERT INTO live (n) VALUES (?)', [n]))
      committed++
    }
  })()
  const started = performance.now()
  await db.checkpoint()
  const checkpointMs = performance.now() - started
  const during = committed
  stop = true
  await committer
  return { during, committed, checkpointMs }
}
