import { join } from 'node:path'
import { open, readFile, rename, stat, type FileHandle } from 'node:fs/promises'
import { DatabaseError } from './errors.js'
import { fsyncDir, writeFileAtomic } from '../core/atomic-file.js'
import { FRAME_MAGIC, checkFrame, frameRecords, type JournalFormat, type RecordRef } from './journal-record.js'

/**
 * Identifies a Parley journal and its format before any frame is trusted: `PRLYJNL` and the format
 * digit. This build writes format 2 (named statements) and still reads format 1 (SQL text in every
 * record), which recovery folds into a snapshot so that the folder continues in format 2.
 */
const HEADER_PREFIX = 'PRLYJNL'
export const JOURNAL_FORMAT: JournalFormat = 2
export const JOURNAL_HEADER = Buffer.from(`${HEADER_PREFIX}${JOURNAL_FORMAT}`, 'latin1')
export const JOURNAL_FILE = 'journal'
export const JOURNAL_TMP_FILE = 'journal.tmp'
/**
 * The journal a checkpoint closed and is folding into the snapshot (off the main thread), while new
 * records go to a fresh `journal`. Present only between a rotation and the end of that fold.
 */
export const SEALED_JOURNAL_FILE = 'journal.sealed'
export const SNAPSHOT_FILE = 'snapshot.sqlite'
export const SNAPSHOT_TMP_FILE = 'snapshot.tmp'

/** Where the journal's bytes go. The committer only needs this much, which also lets tests inject faults. */
export interface JournalSink {
  /** Bytes in the file, all of them synced. */
  readonly size: number
  /**
   * Writes `chunks` at the end of the file as one write, then fdatasyncs; resolves once they are on disk.
   * A write that fails leaves `size` as it was and cuts off what reached the file, so the same chunks can be
   * appended again (after a full disk): it rejects with the write's own error (ENOSPC, ...). A failed sync
   * rejects with `DB_FAILED` instead, whatever its errno, since after it nothing written can be trusted.
   */
  append(chunks: readonly Buffer[]): Promise<void>
  close(): Promise<void>
}

export interface JournalScan {
  /** The whole journal as read at open; record refs point into it. */
  buf: Buffer
  format: JournalFormat
  records: RecordRef[]
  /** Where the valid prefix ends: the file is truncated here if anything follows. */
  validEnd: number
  damage?: {
    offset: number
    reason: string
    /** Offset of a valid frame after the damage: present only for damage in the middle. */
    validFrameAfter?: number
  }
}

/**
 * Reads every frame in order and stops at the first that is not intact. Records must carry
 * consecutive sequence numbers; a gap is damage too, since replaying past it would skip a transaction.
 */
export function scanJournal(buf: Buffer): JournalScan {
  const format = journalFormat(buf)
  const records: RecordRef[] = []
  let offset = JOURNAL_HEADER.length
  while (offset < buf.length) {
    const frame = checkFrame(buf, offset)
    if (!frame.ok) return { format, ...damaged(buf, records, offset, frame.reason) }
    const inFrame = frameRecords(buf, frame.bodyStart, frame.bodyEnd)
    const prev = records.at(-1)
    const first = inFrame[0]
    if (prev && first && first.seq !== prev.seq + 1) {
      return { buf, format, records, validEnd: offset, damage: { offset, reason: `sequence jumps from ${prev.seq} to ${first.seq}`, validFrameAfter: offset } }
    }
    for (let i = 1; i < inFrame.length; i++) {
      const a = inFrame[i - 1]
      const b = inFrame[i]
      if (a && b && b.seq !== a.seq + 1) throw new DatabaseError('DB_CORRUPT', `journal frame at ${offset} has non-consecutive records`)
    }
    records.push(...inFrame)
    offset = frame.bodyEnd
  }
  return { buf, format, records, validEnd: offset }
}

function journalFormat(buf: Buffer): JournalFormat {
  const header = buf.subarray(0, JOURNAL_HEADER.length).toString('latin1')
  if (buf.length < JOURNAL_HEADER.length || !header.startsWith(HEADER_PREFIX)) {
    throw new DatabaseError('DB_CORRUPT', 'the journal file does not start with the Parley journal header')
  }
  const format = header.slice(HEADER_PREFIX.length)
  if (format === '1' || format === '2') return Number(format) as JournalFormat
  throw new DatabaseError(
    'DB_MIGRATION',
    `the journal is in format ${JSON.stringify(format)}, which this build of Parley cannot read (it reads formats 1 and 2): ` +
      'it was written by a newer build, so run that build on this state folder, or start from a new state folder',
  )
}

/** A torn tail has nothing valid after it; any intact frame further on means acknowledged data was damaged. */
function damaged(buf: Buffer, records: RecordRef[], offset: number, reason: string): Omit<JournalScan, 'format'> {
  const magic = Buffer.alloc(4)
  magic.writeUInt32LE(FRAME_MAGIC, 0)
  for (let at = buf.indexOf(magic, offset + 1); at >= 0; at = buf.indexOf(magic, at + 1)) {
    if (checkFrame(buf, at).ok) return { buf, records, validEnd: offset, damage: { offset, reason, validFrameAfter: at } }
  }
  return { buf, records, validEnd: offset, damage: { offset, reason } }
}

/** The append-only journal file. Appends are serialized by the committer; this class does no queuing. */
export class JournalFile implements JournalSink {
  private constructor(
    private readonly fh: FileHandle,
    private bytes: number,
  ) {}

  get size(): number {
    return this.bytes
  }

  /**
   * Opens `<dir>/journal` for appending after `validEnd` (the scan decides it), cutting off a torn tail.
   * The cut is synced before any new frame is written, so new frames never follow garbage.
   */
  static async openAt(dir: string, validEnd: number): Promise<JournalFile> {
    const fh = await open(join(dir, JOURNAL_FILE), 'r+')
    try {
      const { size } = await fh.stat()
      if (size !== validEnd) {
        await fh.truncate(validEnd)
        await fh.sync()
      }
      return new JournalFile(fh, validEnd)
    } catch (err) {
      await fh.close()
      throw err
    }
  }

  /**
   * Installs an empty journal (header only) atomically: written as a temporary file, synced, renamed
   * over the old one, directory synced. A crash leaves either the old journal or the new one, never a mix.
   */
  static async createEmpty(dir: string): Promise<JournalFile> {
    await writeFileAtomic(join(dir, JOURNAL_FILE), JOURNAL_HEADER, { tmp: join(dir, JOURNAL_TMP_FILE) })
    return JournalFile.openAt(dir, JOURNAL_HEADER.length)
  }

  /**
   * Closes the journal for the checkpoint: `journal` becomes `journal.sealed` and an empty `journal`
   * takes its place. The caller must have flushed everything that belongs to the old file and must not
   * append to it again. The directory is synced between the renames, so a crash can never leave the
   * empty journal in place without the sealed one (which would lose the old records), and after the
   * second, so nothing is acknowledged from the new file before its name is durable.
   * `renamed` is called once the old journal has been moved: a failure after that is not a clean no-op,
   * so the second rename goes through `persist`, which tries it again while the disk is full (a rename
   * needs room for the new directory entry).
   */
  static async rotate(dir: string, renamed: () => void, persist: <T>(step: () => Promise<T>) => Promise<T>): Promise<JournalFile> {
    const tmp = join(dir, JOURNAL_TMP_FILE)
    const fh = await open(tmp, 'w')
    try {
      await fh.write(JOURNAL_HEADER, 0, JOURNAL_HEADER.length, 0)
      await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(join(dir, JOURNAL_FILE), join(dir, SEALED_JOURNAL_FILE))
    renamed()
    await fsyncDir(dir)
    await persist(() => rename(tmp, join(dir, JOURNAL_FILE)))
    await fsyncDir(dir)
    return JournalFile.openAt(dir, JOURNAL_HEADER.length)
  }

  /** A journal file's bytes, or undefined when there is none (or only an empty file). */
  static async read(dir: string, name = JOURNAL_FILE): Promise<Buffer | undefined> {
    const path = join(dir, name)
    try {
      if ((await stat(path)).size === 0) return undefined
      return await readFile(path)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw err
    }
  }

  async append(chunks: readonly Buffer[]): Promise<void> {
    let position = this.bytes
    let pending = chunks.filter((c) => c.length > 0)
    try {
      while (pending.length > 0) {
        const { bytesWritten } = await this.fh.writev(pending, position)
        position += bytesWritten
        pending = dropWritten(pending, bytesWritten)
      }
    } catch (err) {
      // A short write, then a refused one (a full disk): cut the part frame (whatever of it reached the file,
      // reported or not) so that nothing follows the last good one. Should the cut fail too, the next append
      // still writes at `bytes`, over it, and recovery cuts a torn tail; the write's error is the one to report.
      await this.fh.truncate(this.bytes).catch(() => undefined)
      throw err
    }
    try {
      // fdatasync also persists the file size, which is all the metadata a reader of the appended bytes needs.
      await this.fh.datasync()
    } catch (err) {
      throw new DatabaseError('DB_FAILED', `fdatasync of the journal failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
    }
    this.bytes = position
  }

  async close(): Promise<void> {
    await this.fh.close()
  }
}

/** What remains of `chunks` after a short write of `n` bytes. */
function dropWritten(chunks: Buffer[], n: number): Buffer[] {
  let left = n
  const rest: Buffer[] = []
  for (const c of chunks) {
    if (left >= c.length) {
      left -= c.length
    } else {
      rest.push(left > 0 ? c.subarray(left) : c)
      left = 0
    }
  }
  return rest
}
