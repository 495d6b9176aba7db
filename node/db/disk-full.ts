import { ParleyError } from '../core/errors.js'

/**
 * A full disk is a pause, not a failure. A write() the kernel refuses with ENOSPC (or EDQUOT: a quota) took
 * nothing beyond what it reported: the bytes before it are as they were, so what was written of the refused
 * write can be cut off and the write tried again once there is space. A failed fsync is another matter (the
 * kernel may have dropped dirty pages whatever its errno says), so the journal reports those as `DB_FAILED`,
 * never with the errno: only a refused write is a full disk here.
 */
export function isDiskFull(err: unknown): boolean {
  // The error itself, not its causes: a failed sync is wrapped in DB_FAILED precisely so that it is not taken for this.
  const code = err instanceof Error ? (err as NodeJS.ErrnoException).code : undefined
  return code === 'ENOSPC' || code === 'EDQUOT'
}

/** While the disk is full the journal write is tried again this often: soon after space returns, without spinning. */
export const DISK_FULL_RETRY_MIN_MS = 500
export const DISK_FULL_RETRY_MAX_MS = 2000

/** The database cannot write its journal for want of space: since when, and what the kernel said. */
export interface DiskFull {
  /** RFC 3339, when the first write was refused. */
  since: string
  detail: string
}

/**
 * What a write is refused with while the disk is full: the node's STORAGE_FULL, since nothing about it is the
 * database's own business (the caller's request was fine, and may succeed later). The text stays the same for
 * the whole condition, so components that log a problem once per distinct text log it once.
 */
export function diskFullError(full: DiskFull, cause?: unknown): ParleyError<'STORAGE_FULL'> {
  return new ParleyError(
    'STORAGE_FULL',
    `the disk holding the database is full (${full.detail}) since ${full.since}: nothing of this was stored; ` +
      'writes resume by themselves once there is space',
    { cause },
  )
}
