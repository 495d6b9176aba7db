import type { FileHandle } from 'node:fs/promises'
import { JournalFile, type JournalSink } from '../../../node/db/journal-file.js'

/** The error a write gets from the kernel when the disk (or a quota) has no room left, as Node reports it. */
export function enospc(syscall = 'write'): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOSPC: no space left on device, ${syscall}`), { code: 'ENOSPC', errno: -28, syscall })
}

/**
 * A full disk for the journal, through `DatabaseOptions.wrapJournal`. While `full`, every append is refused with
 * ENOSPC before anything reaches the file (the common case: the kernel took nothing). With `torn`, the next refused
 * append first writes half of its bytes to the real file, as a short write followed by a refused one leaves it; that
 * needs the real journal's file handle, which the seam hands over (the database wraps the JournalFile it opened).
 */
export class DiskFullFault {
  full = false
  /** While set, the journal's fdatasync fails with this error (writes go through). */
  syncError: Error | undefined
  /** Appends refused so far. */
  refused = 0
  private tearNext = false
  private readonly files: JournalFile[] = []

  /** The next refused append leaves half a frame in the file before it fails. */
  torn(): void {
    this.tearNext = true
    this.full = true
  }

  /** The journals opened so far (the current one last): their `size` is their last good length. */
  get journals(): readonly JournalFile[] {
    return this.files
  }

  readonly wrap = (sink: JournalSink): JournalSink => {
    if (sink instanceof JournalFile) {
      this.files.push(sink)
      this.interpose(sink)
    }
    return sink
  }

  /** Replaces the journal's vectored write and its fdatasync, the calls through which it appends, for this file only. */
  private interpose(file: JournalFile): void {
    // The handle is private to JournalFile: reached here on purpose, so that the fault is in the file system call
    // and everything above it (cutting a part frame, retrying, stalling) is the real code.
    const fh = (file as unknown as { fh: FileHandle }).fh
    const writev = fh.writev.bind(fh)
    const faulty = async (buffers: NodeJS.ArrayBufferView[], position?: number | null): Promise<{ bytesWritten: number; buffers: NodeJS.ArrayBufferView[] }> => {
      if (!this.full) return writev(buffers, position ?? undefined)
      this.refused++
      if (this.tearNext) {
        this.tearNext = false
        const all = Buffer.concat(buffers.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength)))
        await fh.write(all, 0, Math.max(1, Math.floor(all.length / 2)), position ?? undefined)
      }
      throw enospc()
    }
    fh.writev = faulty as FileHandle['writev']
    const datasync = fh.datasync.bind(fh)
    fh.datasync = async () => {
      if (this.syncError) throw this.syncError
      return datasync()
    }
  }
}
