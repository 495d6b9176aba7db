import type { DatabaseStats } from './types.js'

/**
 * sql.js keeps the whole database inside its WebAssembly heap, which cannot grow past 2 GiB. A checkpoint builds the
 * next snapshot in a worker thread whose own heap, with the same limit, holds the database rebuilt from the files and
 * then its serialized copy. So the database must stay under half a heap with room for SQLite's caches: beyond this
 * size a checkpoint can fail (nothing is lost, but the journal then grows without bound).
 */
export const DATABASE_LIMIT_BYTES = 900 * 1024 * 1024
/** Past this share of the limit the node says so, in /status and once in its log, while there is still time. */
export const DATABASE_WARN_AT = 0.7

export interface DatabaseCapacity {
  bytes: number
  limitBytes: number
  /** `bytes / limitBytes`, rounded to a thousandth. */
  used: number
  journalBytes: number
  lastCheckpointMs: number | null
  lastCheckpointExportMs: number | null
  warning?: string
}

export function databaseCapacity(s: DatabaseStats): DatabaseCapacity {
  const used = Math.round((s.databaseBytes / DATABASE_LIMIT_BYTES) * 1000) / 1000
  return {
    bytes: s.databaseBytes,
    limitBytes: DATABASE_LIMIT_BYTES,
    used,
    journalBytes: s.journalBytes,
    lastCheckpointMs: s.lastCheckpointMs,
    lastCheckpointExportMs: s.lastCheckpointExportMs,
    ...(used >= DATABASE_WARN_AT
      ? { warning: `the database holds ${mib(s.databaseBytes)} of the ${mib(DATABASE_LIMIT_BYTES)} an in-memory (sql.js) member can keep; start a member with a new state folder, or move this one to PostgreSQL, before it is full` }
      : {}),
  }
}

const mib = (n: number): string => `${Math.round(n / (1024 * 1024))} MiB`
