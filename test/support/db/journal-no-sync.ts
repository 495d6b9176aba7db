import type { FileHandle } from 'node:fs/promises'
import { JournalFile, type JournalSink } from '../../../node/db/journal-file.js'

/**
 * A journal whose appends skip their fdatasync, through `DatabaseOptions.wrapJournal`: for tests of what a database
 * holds and answers within a process, where a power cut is not the question. Each commit's fdatasync costs ~3 ms
 * here, most of it kernel CPU on a shared disk; a unit test commits hundreds of transactions. What a process reads
 * back, a reopened database included, is the same without it (the page cache holds the bytes); durability itself is
 * tested with the real sync, by the crash and recovery tests in test/db.
 */
export const withoutJournalSync = (sink: JournalSink): JournalSink => {
  if (sink instanceof JournalFile) {
    // The handle is private to JournalFile, reached on purpose as DiskFullFault (disk-faults.ts) does: everything
    // above the system call stays the real code.
    const fh = (sink as unknown as { fh: FileHandle }).fh
    fh.datasync = async () => {}
  }
  return sink
}
