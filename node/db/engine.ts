import type { DiskFull } from './disk-full.js'
import { DatabaseError } from './errors.js'
import type { DatabaseStats, Row, SqlParams, Tx } from './types.js'

/** Which engine holds a member's state (config `database.type`). */
export type EngineName = 'sqljs' | 'postgres'

/**
 * The member's database engine (config `database`). `sqljs` (the default): SQLite in memory under `dataDir/db`,
 * made durable by its journal, within a ~900 MiB ceiling. `postgres`: a PostgreSQL database the member owns alone,
 * named by `url` (`postgres://user:password@host:port/dbname`); it must exist, the member runs its migrations in it.
 * Blobs stay under `dataDir` with either engine.
 */
export type DatabaseConfig = { type: 'sqljs' } | { type: 'postgres'; url: string }

/**
 * SQL the engines spell differently that callers outside node/db/pg need, as read statements with bound parameters.
 * Repository SQL is written once, in SQLite's dialect; the PostgreSQL engine translates it (pg/translate.ts).
 */
export interface Dialect {
  readonly engine: EngineName
  /** A row when the table `?` exists. */
  readonly tableExists: string
  /** A row when the table `?` has the column `?`. */
  readonly columnExists: string
}

/** The database as /status shows it. */
export interface DatabaseStatus {
  engine: EngineName
  /** Whether it accepts reads and writes now (PostgreSQL: connected; sql.js: its journal has not failed). */
  healthy: boolean
  /** Bytes the database takes (sql.js: its pages in memory; PostgreSQL: pg_database_size, read at most every few seconds). */
  sizeBytes: number
  /** Why it is not healthy, and since when. */
  detail?: string
  since?: string
}

/**
 * What the node sees of its database, whichever engine (node/db/database.ts for sql.js, node/db/pg/ for PostgreSQL).
 * Every repository and capability uses it synchronously: `transaction(fn)` runs `fn` at once, in its own savepoint of
 * the event-loop turn's SQL transaction, and resolves once that turn's COMMIT is durable; `all` and `get` read, and see
 * the turn's writes. node/db/README.md gives the rules.
 */
export interface Database {
  readonly dialect: Dialect
  transaction<T>(fn: (tx: Tx) => T): Promise<T>
  all<R extends Row = Row>(sql: string, params?: SqlParams): R[]
  get<R extends Row = Row>(sql: string, params?: SqlParams): R | undefined
  /** sql.js: folds the journal into a new snapshot. PostgreSQL keeps its own files: resolves once earlier commits have. */
  checkpoint(): Promise<void>
  close(): Promise<void>
  /** Since when, and why, writes are refused for want of space (sql.js's journal); undefined while they are accepted. */
  readonly diskFull: DiskFull | undefined
  /**
   * Whether writes are refused for now for a reason that passes by itself (a full disk, the database server away):
   * background loops wait with `whenWritable` instead of giving up.
   */
  readonly writesPaused: boolean
  /** Resolves once writes may be accepted again (room on the disk, the database server back), or `signal` aborts. */
  whenWritable(signal?: AbortSignal): Promise<void>
  /** The pause before a background loop retries a failed write: until writable if it is not, else the backoff's delay. */
  beforeRetry(backoff: { next(): number }, signal?: AbortSignal): Promise<void>
  /** For shutdown: stop waiting for space (or for the server); what waits for it rejects. */
  stopWaitingForSpace(): void
  stats(): DatabaseStats
  status(): DatabaseStatus
}

export const SQLITE_DIALECT: Dialect = {
  engine: 'sqljs',
  tableExists: "SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = ?",
  columnExists: 'SELECT 1 AS x FROM pragma_table_info(?) WHERE name = ?',
}

export const POSTGRES_DIALECT: Dialect = {
  engine: 'postgres',
  tableExists: 'SELECT 1 AS x FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?',
  columnExists: 'SELECT 1 AS x FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?',
}

/** Whether a write that failed with `err` may go through later without a restart, so that a background loop retries it. */
export function retryableWrite(db: Pick<Database, 'writesPaused'>, err: unknown): boolean {
  return db.writesPaused || (err instanceof DatabaseError && err.code === 'DB_UNAVAILABLE')
}
