import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Connection } from './connection.js'
import { DatabaseError, asError } from './errors.js'
import { SNAPSHOT_FILE, type JournalScan } from './journal-file.js'
import { decodeRecord } from './journal-record.js'

/**
 * Replay, shared by recovery (main thread, at open) and the checkpoint worker (which folds a sealed
 * journal into a new snapshot). It imports only the connection and the journal codec, so the worker
 * does not load the rest of the node.
 */

/**
 * The table, inside the database and therefore inside every snapshot, that says which journal record
 * the snapshot includes. Being in the snapshot file makes it atomic with the data it describes.
 */
const META_TABLE = 'parley_journal_meta'

export async function readSnapshot(dir: string): Promise<Uint8Array | undefined> {
  try {
    return await readFile(join(dir, SNAPSHOT_FILE))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
}

/**
 * Creates the meta table on a new database (identically on every open, so replay starts from the same
 * state the live database started from) and returns the sequence number the loaded snapshot includes.
 */
export function ensureMeta(conn: Connection): number {
  conn.begin()
  try {
    conn.step(conn.prepare(`CREATE TABLE IF NOT EXISTS ${META_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), snapshot_seq INTEGER NOT NULL)`), undefined)
    conn.step(conn.prepare(`INSERT OR IGNORE INTO ${META_TABLE} (id, snapshot_seq) VALUES (1, 0)`), undefined)
    conn.commit()
  } catch (err) {
    conn.rollback()
    throw new DatabaseError('DB_CORRUPT', `the snapshot could not be read: ${String(err)}`, { cause: err })
  }
  const seq = conn.query(conn.prepare(`SELECT snapshot_seq FROM ${META_TABLE} WHERE id = 1`), undefined, 1)[0]?.['snapshot_seq']
  return typeof seq === 'number' ? seq : 0
}

/** Records, inside the database, that a snapshot about to be exported includes transactions up to `seq`. */
export function markSnapshotSeq(conn: Connection, seq: number): void {
  conn.begin()
  try {
    conn.step(conn.prepare(`UPDATE ${META_TABLE} SET snapshot_seq = ? WHERE id = 1`), [seq])
    conn.commit()
  } catch (err) {
    conn.rollback()
    throw err
  }
}

/** Records replayed per SQLite transaction: commits dominate replay time when records are small. */
const REPLAY_BATCH = 1000

/**
 * Applies, in order, each record of one journal file after `afterSeq` (what the snapshot, and any
 * journal file replayed before this one, already hold). Several records share one SQLite transaction:
 * each of them committed successfully when it ran live, and replay is deterministic, so they commit
 * together just as well (deferred constraints included), several times faster.
 *
 * Records already included (left by a crash between a checkpoint's snapshot and the removal of its
 * journal) are decoded but not applied: later records of the same file may use the names they define.
 * Returns the file's statement dictionary as far as it is valid.
 */
export function replay(conn: Connection, scan: JournalScan, afterSeq: number, what = 'journal'): { lastSeq: number; replayed: number; names: string[] } {
  const first = scan.records[0]
  if (first && first.seq > afterSeq + 1) {
    throw new DatabaseError('DB_CORRUPT', `the ${what} starts at transaction ${first.seq} but what precedes it ends at ${afterSeq}: transactions are missing`)
  }
  const names: string[] = []
  const included = scan.records.filter((r) => r.seq <= afterSeq)
  for (const ref of included) decodeRecord(scan.buf, ref, names, scan.format)
  const todo = scan.records.slice(included.length)
  for (let i = 0; i < todo.length; i += REPLAY_BATCH) {
    conn.begin()
    let seq = 0
    try {
      for (const ref of todo.slice(i, i + REPLAY_BATCH)) {
        seq = ref.seq
        for (const op of decodeRecord(scan.buf, ref, names, scan.format).ops) {
          if (op.kind === 'script') conn.script(op.sql)
          else conn.step(conn.prepare(op.sql), op.params)
        }
      }
      conn.commit()
    } catch (err) {
      conn.rollback()
      throw new DatabaseError('DB_CORRUPT', `replaying ${what} transaction ${seq} failed: ${asError(err).message}`, { cause: err })
    }
  }
  return { lastSeq: todo.at(-1)?.seq ?? afterSeq, replayed: todo.length, names }
}
