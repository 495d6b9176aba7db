import { join } from 'node:path'
import { copyFile, open, rm } from 'node:fs/promises'
import { Connection } from './connection.js'
import { fsyncDir, writeFileAtomic } from '../core/atomic-file.js'
import {
  JOURNAL_FILE,
  JOURNAL_FORMAT,
  JOURNAL_TMP_FILE,
  JournalFile,
  SEALED_JOURNAL_FILE,
  SNAPSHOT_FILE,
  SNAPSHOT_TMP_FILE,
  scanJournal,
  type JournalScan,
} from './journal-file.js'
import { DatabaseError } from './errors.js'
import { ensureMeta, markSnapshotSeq, readSnapshot, replay } from './replay.js'


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
  /** A sealed journal holds transactions the snapshot lacks: the next checkpoint must fold it first. */
  sealedPending: boolean
}

export interface RecoverOptions {
  /** Cut a journal damaged in the middle at the damage instead of refusing to open (a copy is kept). */
  repairCorruptJournal: boolean
  log: (line: string) => void
}

/**
 * Loads the snapshot, replays the sealed journal (if a checkpoint was folding one) and then the journal
 * after it, skipping what the snapshot already includes, and leaves the journal ready for appending.
 */
export async function recover(dir: string, opts: RecoverOptions): Promise<Recovered> {
  // Leftovers of an interrupted checkpoint; the files they were meant to replace are still whole.
  await rm(join(dir, SNAPSHOT_TMP_FILE), { force: true })
  await rm(join(dir, JOURNAL_TMP_FILE), { force: true })

  const conn = await Connection.open(await readSnapshot(dir))
  try {
    const snapshotSeq = ensureMeta(conn)
    let lastSeq = snapshotSeq
    let replayed = 0
    let sealedPending = false

    const sealedBuf = await JournalFile.read(dir, SEALED_JOURNAL_FILE)
    if (sealedBuf) {
      const scan = scanJournal(sealedBuf)
      await handleDamage(dir, SEALED_JOURNAL_FILE, scan, opts)
      if (scan.damage?.validFrameAfter !== undefined) {
        // A repair cuts acknowledged transactions out of the sealed journal. Everything in the journal comes after
        // them, so none of it can be replayed on what is left: it goes too (kept aside), before the sealed file is
        // cut, so that a crash in between leaves what this open found, and the next open repairs it again.
        const copy = await keepCopy(dir, JOURNAL_FILE)
        if (copy) {
          await (await JournalFile.createEmpty(dir)).close()
          opts.log(`journal: ${JOURNAL_FILE} holds only transactions after those cut from ${SEALED_JOURNAL_FILE}; set aside as ${copy}`)
        }
      }
      // The checkpoint worker reads the file itself: it must see the same records as this replay.
      if (scan.damage) await truncateFile(join(dir, SEALED_JOURNAL_FILE), scan.validEnd)
      const r = replay(conn, scan, lastSeq, 'sealed journal')
      lastSeq = r.lastSeq
      replayed += r.replayed
      if (r.replayed > 0) {
        sealedPending = true
        opts.log(`journal: a checkpoint had not finished folding ${SEALED_JOURNAL_FILE} (transactions up to ${lastSeq}); the next one retries`)
      } else {
        // The crash came after the new snapshot was in place but before the sealed journal was removed.
        await rm(join(dir, SEALED_JOURNAL_FILE), { force: true })
        await fsyncDir(dir)
      }
    }

    const buf = await JournalFile.read(dir)
    // No journal besides a sealed one: a crash between the rotation's two renames.
    if (!buf) return { conn, journal: await JournalFile.createEmpty(dir), snapshotSeq, lastSeq, replayed, names: [], sealedPending }

    const scan = scanJournal(buf)
    await handleDamage(dir, JOURNAL_FILE, scan, opts)
    const r = replay(conn, scan, lastSeq)
    replayed += r.replayed
    lastSeq = r.lastSeq
    if (scan.format !== JOURNAL_FORMAT) return { ...(await upgrade(dir, conn, snapshotSeq, lastSeq, opts)), replayed }
    const journal = await JournalFile.openAt(dir, scan.validEnd)
    return { conn, journal, snapshotSeq, lastSeq, replayed, names: r.names, sealedPending }
  } catch (err) {
    conn.close()
    throw err
  }
}

async function truncateFile(path: string, size: number): Promise<void> {
  const fh = await open(path, 'r+')
  try {
    await fh.truncate(size)
    await fh.sync()
  } finally {
    await fh.close()
  }
}

/**
 * A journal in an older format is read but never appended to, since a file has one format: fold what
 * was replayed into the snapshot, then install an empty journal in the current format. The same steps
 * as the old checkpoint (an export on the main thread, once, at open), so a crash between them leaves
 * a snapshot and a journal that replay correctly, and the next open upgrades again.
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
  // Anything sealed is older than the upgraded journal, hence in the snapshot now.
  await rm(join(dir, SEALED_JOURNAL_FILE), { force: true })
  const journal = await JournalFile.createEmpty(dir)
  opts.log(`journal: upgraded to format ${JOURNAL_FORMAT}; the old journal's transactions up to ${lastSeq} are now in the snapshot`)
  return { conn, journal, snapshotSeq: Math.max(snapshotSeq, lastSeq), lastSeq, names: [], sealedPending: false }
}

/**
 * A torn tail (nothing valid after the damage) is the normal trace of a crash mid-flush: those records
 * were never acknowledged, and the journal is cut there. Damage followed by valid frames means
 * acknowledged data was lost, which is refused unless the operator asks for a repair.
 */
async function handleDamage(dir: string, file: string, scan: JournalScan, opts: RecoverOptions): Promise<void> {
  const damage = scan.damage
  if (!damage) return
  const lost = scan.buf.length - damage.offset
  if (damage.validFrameAfter === undefined) {
    opts.log(`journal: cutting a torn tail of ${lost} bytes at offset ${damage.offset} of ${file} (${damage.reason})`)
    return
  }
  const what = `the ${file} file is damaged at offset ${damage.offset} (${damage.reason}) but has valid data after it, at offset ${damage.validFrameAfter}`
  if (!opts.repairCorruptJournal) {
    throw new DatabaseError('DB_CORRUPT', `${what}; refusing to drop acknowledged transactions (open with repairCorruptJournal to cut the journal there)`)
  }
  const copy = await keepCopy(dir, file)
  opts.log(`journal: ${what}; repairing by cutting ${lost} bytes, original kept as ${copy}`)
}

/** A durable copy of `file` as `<file>.corrupt-<time>`, before a repair changes it; undefined when there is no file. */
async function keepCopy(dir: string, file: string): Promise<string | undefined> {
  const copy = join(dir, `${file}.corrupt-${Date.now()}`)
  try {
    await copyFile(join(dir, file), copy)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  const fh = await open(copy, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
  await fsyncDir(dir)
  return copy
}
