import { join } from 'node:path'
import { writeFileAtomic } from '../core/atomic-file.js'
import { Connection } from './connection.js'
import { DatabaseError } from './errors.js'
import { JournalFile, SEALED_JOURNAL_FILE, SNAPSHOT_FILE, SNAPSHOT_TMP_FILE, scanJournal } from './journal-file.js'
import { ensureMeta, markSnapshotSeq, readSnapshot, replay } from './replay.js'

export interface BuiltSnapshot {
  /** The last sequence number the snapshot on disk now includes. */
  seq: number
  /** Records replayed from the sealed journal (0: the snapshot already held them, nothing written). */
  replayed: number
  snapshotBytes: number
  /** Replay, export and write, in the thread that ran it. */
  buildMs: number
  exportMs: number
}

/**
 * Folds `journal.sealed` into `snapshot.sqlite` from the files alone, never from the live connection:
 * load the snapshot, replay the sealed records it lacks, export, write snapshot.tmp, fsync, rename,
 * fsync the directory. Meant for the checkpoint worker, where the export does not block the node.
 * A crash at any step leaves the old snapshot and the sealed journal, or the new snapshot (which says
 * it includes the sealed records) and the sealed journal: both replay to the same database.
 */
export async function buildSnapshot(dir: string): Promise<BuiltSnapshot> {
  const start = performance.now()
  const conn = await Connection.open(await readSnapshot(dir))
  try {
    const snapshotSeq = ensureMeta(conn)
    const { lastSeq, replayed } = await replaySealed(dir, conn, snapshotSeq)
    if (replayed === 0) return { seq: snapshotSeq, replayed, snapshotBytes: 0, buildMs: performance.now() - start, exportMs: 0 }
    markSnapshotSeq(conn, lastSeq)
    const exportStart = performance.now()
    const bytes = conn.export()
    const exportMs = performance.now() - exportStart
    await writeFileAtomic(join(dir, SNAPSHOT_FILE), bytes, { tmp: join(dir, SNAPSHOT_TMP_FILE) })
    return { seq: lastSeq, replayed, snapshotBytes: bytes.length, buildMs: performance.now() - start, exportMs }
  } finally {
    conn.close()
  }
}

/** Separate so that the journal's bytes are garbage by the time the export makes its copy. */
async function replaySealed(dir: string, conn: Connection, snapshotSeq: number): Promise<{ lastSeq: number; replayed: number }> {
  const sealed = await JournalFile.read(dir, SEALED_JOURNAL_FILE)
  if (!sealed) throw new DatabaseError('DB_FAILED', `there is no ${SEALED_JOURNAL_FILE} to fold into the snapshot`)
  const scan = scanJournal(sealed)
  // Recovery cuts a torn tail before anything is sealed again, and a sealed journal is never appended
  // to: damage here is not a crash's trace, and folding past it would drop transactions.
  if (scan.damage) throw new DatabaseError('DB_CORRUPT', `${SEALED_JOURNAL_FILE} is damaged at offset ${scan.damage.offset} (${scan.damage.reason})`)
  const { lastSeq, replayed } = replay(conn, scan, snapshotSeq, 'sealed journal')
  return { lastSeq, replayed }
}
