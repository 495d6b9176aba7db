import { join } from 'node:path'
import { copyFile, readFile } from 'node:fs/promises'
import { Connection } from './connection.js'
import { DatabaseError, asError } from './errors.js'
import { rm } from 'node:fs/promises'
import { writeFileAtomic } from '../core/atomic-file.js'
import { JOURNAL_FILE, JOURNAL_FORMAT, JOURNAL_TMP_FILE, JournalFile, scanJournal, type JournalScan } from './journal-file.js'
import { decodeRecord } from './journal-record.js'
import { SNAPSHOT_FILE, SNAPSHOT_TMP_FILE } from './checkpoint.js'

/**
 * The table, inside the database and therefore inside every snapshot, that says which journal record
 * the snapshot includes. Being in the snapshot file makes it atomic with the data it describes.
 */
const META_TABLE = 'parley_journal_meta'

export interface Recovered {
  conn: Connection
  journal: JournalFile
  /** Last sequence number included by the snapshot on disk. */
  snapshotSeq: number
  /** Last committed sequence number after replay. */
  lastSeq: number
  replayed: number
  /**
   * The journal's statement dictionary (texts by id) as far as the file is valid: the writer starts
   * from exactly this, so it never refers to a definition that was in a torn tail.
   */
  names: string[]
}

export interface RecoverOptions {
  /** Cut a journal damaged in the middle at the damage instead of refusing to open (a copy is kept). */
  repairCorruptJournal: boolean
  log: (line: string) => void
}

/** Loads the snapshot, replays the journal after it, and leaves the journal ready for appending. */
export async function recover(dir: string, opts: RecoverOptions): Promise<Recovered> {
  // Leftovers of an interrupted checkpoint; the files they were meant to replace are still whole.
  await rm(join(dir, SNAPSHOT_TMP_FILE), { force: true })
  await rm(join(dir, JOURNAL_TMP_FILE), { force: true })

  const conn = await Connection.open(await readSnapshot(dir))
  try {
    const snapshotSeq = ensureMeta(conn)
    const buf = await JournalFile.read(dir)
    if (!buf) return { conn, journal: await JournalFile.createEmpty(dir), snapshotSeq, lastSeq: snapshotSeq, replayed: 0, names: [] }

    const scan = scanJournal(buf)
    await handleDamage(dir, scan, opts)
    const { lastSeq, replayed, names } = replay(conn, scan, snapshotSeq)
    if (scan.format !== JOURNAL_FORMAT) return { ...(await upgrade(dir, conn, snapshotSeq, lastSeq, opts)), replayed }
    const journal = await JournalFile.openAt(dir, scan.validEnd)
    return { conn, journal, snapshotSeq, lastSeq, replayed, names }
  } catch (err) {
    conn.close()
    throw err
  }
}

async function readSnapshot(dir: string): Promise<Uint8Array | undefined> {
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
function ensureMeta(conn: Connection): number {
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

/**
 * A journal in an older format is read but never appended to, since a file has one format: fold what
 * was replayed into the snapshot, then install an empty journal in the current format. The same steps
 * as a checkpoint, so a crash between them leaves a snapshot and a journal that replay correctly, and
 * the next open upgrades again.
 */
async function upgrade(
  dir: string,
  conn: Connection,
  snapshotSeq: number,
  lastSeq: number,
  opts: RecoverOptions,
): Promise<Omit<Recovered, 'replayed'>> {
  if (lastSeq > snapshotSeq) {
    markSnapshotSeq(conn, lastSeq)
    await writeFileAtomic(join(dir, SNAPSHOT_FILE), conn.export(), { tmp: join(dir, SNAPSHOT_TMP_FILE) })
  }
  const journal = await JournalFile.createEmpty(dir)
  opts.log(`journal: upgraded to format ${JOURNAL_FORMAT}; the old journal's transactions up to ${lastSeq} are now in the snapshot`)
  return { conn, journal, snapshotSeq: Math.max(snapshotSeq, lastSeq), lastSeq, names: [] }
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

/**
 * A torn tail (nothing valid after the damage) is the normal trace of a crash mid-flush: those records
 * were never acknowledged, and the journal is cut there. Damage followed by valid frames means
 * acknowledged data was lost, which is refused unless the operator asks for a repair.
 */
async function handleDamage(dir: string, scan: JournalScan, opts: RecoverOptions): Promise<void> {
  const damage = scan.damage
  if (!damage) return
  const lost = scan.buf.length - damage.offset
  if (damage.validFrameAfter === undefined) {
    opts.log(`journal: cutting a torn tail of ${lost} bytes at offset ${damage.offset} (${damage.reason})`)
    return
  }
  const what = `the journal is damaged at offset ${damage.offset} (${damage.reason}) but has valid data after it, at offset ${damage.validFrameAfter}`
  if (!opts.repairCorruptJournal) {
    throw new DatabaseError('DB_CORRUPT', `${what}; refusing to drop acknowledged transactions (open with repairCorruptJournal to cut the journal there)`)
  }
  const copy = join(dir, `${JOURNAL_FILE}.corrupt-${Date.now()}`)
  await copyFile(join(dir, JOURNAL_FILE), copy)
  opts.log(`journal: ${what}; repairing by cutting ${lost} bytes, original kept as ${copy}`)
}

/** Records replayed per SQLite transaction: commits dominate replay time when records are small. */
const REPLAY_BATCH = 1000

/**
 * Applies, in order, each record the snapshot does not include. Several records share one SQLite
 * transaction: each of them committed successfully when it ran live, and replay is deterministic,
 * so they commit together just as well (deferred constraints included), several times faster.
 *
 * Records the snapshot includes (left by a crash between a checkpoint's snapshot and its journal swap)
 * are decoded but not applied: later records may use the statement names they define.
 */
function replay(conn: Connection, scan: JournalScan, snapshotSeq: number): { lastSeq: number; replayed: number; names: string[] } {
  const first = scan.records[0]
  if (first && first.seq > snapshotSeq + 1) {
    throw new DatabaseError('DB_CORRUPT', `the journal starts at transaction ${first.seq} but the snapshot ends at ${snapshotSeq}: transactions are missing`)
  }
  const names: string[] = []
  const included = scan.records.filter((r) => r.seq <= snapshotSeq)
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
      throw new DatabaseError('DB_CORRUPT', `replaying journal transaction ${seq} failed: ${asError(err).message}`, { cause: err })
    }
  }
  return { lastSeq: todo.at(-1)?.seq ?? snapshotSeq, replayed: todo.length, names }
}
