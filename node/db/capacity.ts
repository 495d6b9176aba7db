import { ParleyError } from '../core/errors.js'
import { now } from '../core/time.js'
import { diskFullError, type DiskFull } from './disk-full.js'
import type { DatabaseStats } from './types.js'

/**
 * sql.js keeps the whole database inside its WebAssembly heap, which cannot grow past 2 GiB. A checkpoint builds the
 * next snapshot in a worker thread whose own heap, with the same limit, holds the database rebuilt from the files and
 * then its serialized copy. So the database must stay under half a heap with room for SQLite's caches: beyond this
 * size a checkpoint can fail (nothing is lost, but the journal then grows without bound).
 */
export const DATABASE_LIMIT_BYTES = 900 * 1024 * 1024
/** Past this share of the limit the node says so, in /status and once in its log, while there is still time. */
export const DATABASE_WARN_AT = 0.8

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

export function databaseCapacity(s: DatabaseStats, limitBytes = DATABASE_LIMIT_BYTES): DatabaseCapacity {
  const used = Math.round((s.databaseBytes / limitBytes) * 1000) / 1000
  return {
    bytes: s.databaseBytes,
    limitBytes,
    used,
    journalBytes: s.journalBytes,
    lastCheckpointMs: s.lastCheckpointMs,
    lastCheckpointExportMs: s.lastCheckpointExportMs,
    ...(used >= DATABASE_WARN_AT
      ? { warning: `the database holds ${mib(s.databaseBytes)} of the ${mib(limitBytes)} an in-memory (sql.js) member can keep; start a member with a new state folder, or move this one to PostgreSQL, before it is full` }
      : {}),
  }
}

/**
 * Whether this member can store more, as /status shows it:
 * - `ok`;
 * - `full`: the database has reached its ceiling (`DATABASE_LIMIT_BYTES`): new sends and uploads from this member's
 *   clients are refused, while reads and what peers send go on;
 * - `disk-full`: the disk refused the journal; every write waits (and new ones are refused) until it has room.
 */
export interface StorageStatus {
  condition: 'ok' | 'full' | 'disk-full'
  /** When the condition began (as far as this node has seen: the ceiling is noticed when the size is read). */
  since?: string
  detail?: string
}

/** What the gate reads: the database's size and whether its journal can be written. */
export interface CapacitySource {
  stats(): DatabaseStats
  readonly diskFull: DiskFull | undefined
}

type Level = 'ok' | 'warn' | 'full'

/**
 * The ceiling, in one place. A member's own clients add to its database (sends, uploads, datatype definitions): the
 * capabilities that accept those call `admit()` first, which refuses with STORAGE_FULL (HTTP 507) at the ceiling or
 * while the disk is full. Nothing else is gated: the aggregator and fetchers keep storing what peers send, since
 * every member must keep the same history, and reads never stop. Crossing the warning share or the ceiling (either
 * way) is logged once per crossing, whoever notices it first (a send, /status or the periodic watch).
 */
export class StorageGate {
  private level: Level = 'ok'
  private fullSince: string | undefined
  /**
   * A reading below the warning share, reused by `admit()` until the end of the event-loop turn it was taken in:
   * reading the size is a query, and a busy member admits many sends per turn. Below the warning share the database
   * is a fifth of its limit (180 MiB) away from the ceiling, and what the sends admitted in one turn write is bounded
   * by the bodies they came in; the gate never counted admitted sends that had not written yet anyway. From the
   * warning share on, and in `status()`, every call reads the size, so the ceiling is refused as exactly as before.
   */
  private turnReading: DatabaseCapacity | undefined

  constructor(
    private readonly db: CapacitySource,
    private readonly log: (line: string) => void,
    private readonly limitBytes = DATABASE_LIMIT_BYTES,
  ) {}

  /** Throws STORAGE_FULL if new work from this member's clients cannot be stored now; the caller has stored nothing yet. */
  admit(): void {
    const full = this.db.diskFull
    if (full) throw diskFullError(full)
    const capacity = this.turnReading ?? this.read()
    if (this.level === 'full') {
      throw new ParleyError(
        'STORAGE_FULL',
        `the database holds ${capacity.bytes} bytes (${mib(capacity.bytes)}), at or past the ${capacity.limitBytes} bytes ` +
          `(${mib(capacity.limitBytes)}) an in-memory member can keep: new sends are refused; it still serves reads and what peers send`,
      )
    }
  }

  /** The database's size against its ceiling, and the storage condition. */
  status(): { capacity: DatabaseCapacity; storage: StorageStatus } {
    const capacity = this.read()
    const full = this.db.diskFull
    const storage: StorageStatus = full
      ? { condition: 'disk-full', since: full.since, detail: `the journal cannot be written: ${full.detail}` }
      : this.level === 'full'
        ? { condition: 'full', ...(this.fullSince ? { since: this.fullSince } : {}), detail: `the database is at its ceiling of ${mib(capacity.limitBytes)}: new sends are refused` }
        : { condition: 'ok' }
    return { capacity, storage }
  }

  /** The capacity now, noting (and logging) a crossing since the last reading. */
  private read(): DatabaseCapacity {
    const capacity = databaseCapacity(this.db.stats(), this.limitBytes)
    const level: Level = capacity.bytes >= capacity.limitBytes ? 'full' : capacity.warning ? 'warn' : 'ok'
    if (level !== this.level) this.crossed(level, capacity)
    if (level !== 'ok') this.turnReading = undefined
    else if (this.turnReading === undefined) {
      this.turnReading = capacity
      setImmediate(() => (this.turnReading = undefined))
    } else this.turnReading = capacity
    return capacity
  }

  private crossed(level: Level, c: DatabaseCapacity): void {
    const was = this.level
    this.level = level
    this.fullSince = level === 'full' ? now() : undefined
    if (level === 'full') {
      this.log(`database: at its ceiling (${mib(c.bytes)} of ${mib(c.limitBytes)}): new sends and uploads are refused (507); reads and what peers send go on`)
    } else if (level === 'warn') {
      this.log(`database: ${c.warning}${was === 'full' ? ' (back below the ceiling: new sends are accepted again)' : ''}`)
    } else {
      this.log(`database: ${mib(c.bytes)} of ${mib(c.limitBytes)}, back below ${Math.round(DATABASE_WARN_AT * 100)} % of what an in-memory member can keep`)
    }
  }
}

const mib = (n: number): string => `${Math.round(n / (1024 * 1024))} MiB`
