/**
 * The shapes the rest of the node sees. Values are exactly what sql.js can bind and return, so nothing
 * is converted behind the caller's back (and the journal can replay a statement with identical values).
 */

/**
 * A value bound to or read from SQLite. Integers are read back as `number` (exact up to 2^53).
 * A `bigint` is bound the way sql.js binds it, as its decimal text, which an INTEGER column stores exactly.
 */
export type SqlValue = string | number | bigint | Uint8Array | null

export type Row = Record<string, SqlValue>

/**
 * Positional values for `?` placeholders, or named values whose keys carry their prefix exactly as
 * written in the SQL (`{ ':id': 1 }` for `:id`), which is how sql.js matches them.
 */
export type SqlParams = readonly SqlValue[] | Readonly<Record<string, SqlValue>>

export interface RunResult {
  /** Rows changed by this INSERT, UPDATE or DELETE (SQLite's `changes()`). */
  changes: number
  /** For an INSERT or REPLACE, the rowid of the (last) row it inserted; 0 for other statements, or when not asked for. */
  lastInsertRowid: number
}

export interface RunOptions {
  /**
   * Whether to read the INSERT's rowid into `lastInsertRowid` (the default). sql.js has no call for it, so it costs
   * one more statement per INSERT: writers that never read it (bulk inserts, see insertRows) say false.
   */
  rowid?: boolean
}

/**
 * The handle a transaction function receives. It is only valid while that function runs.
 * Any statement error aborts the whole transaction, even if the function catches it: a half-applied
 * statement could not be replayed faithfully from the journal. Use `ON CONFLICT` clauses instead of
 * catching constraint errors.
 */
export interface Tx {
  /** Runs one statement. SQL that writes must be deterministic: see `sql-guard.ts`. */
  run(sql: string, params?: SqlParams, options?: RunOptions): RunResult
  /**
   * Runs a statement that writes, when the caller reads nothing of its result and catches none of its errors: an
   * engine may send it later, with the function's next statement that needs an answer or as the function returns
   * (PostgreSQL: one round trip for many writes), while sql.js runs it at once. A failure still fails the function
   * (its savepoint rolls back), but may be thrown by that later statement, or make the transaction's promise reject.
   */
  write(sql: string, params?: SqlParams): void
  /** Rows of one statement; a statement that writes (e.g. `RETURNING`) is journaled like `run`. */
  all<R extends Row = Row>(sql: string, params?: SqlParams): R[]
  get<R extends Row = Row>(sql: string, params?: SqlParams): R | undefined
  /** Runs a script of several parameterless statements (schema changes); journaled as one step. */
  exec(sql: string): void
}

export interface Migration {
  /** Positive integer; migrations apply in increasing order, each exactly once. */
  version: number
  name: string
  /**
   * SQL script; deterministic like every other write, since the journal replays it. Never edited once
   * shipped: databases record its checksum and refuse to open under different SQL (see migrations.ts).
   */
  up: string
  /**
   * Runs after `up`, in its transaction: what SQL cannot write alike on both engines (a sha256 per row, say). It reads
   * and writes through `tx` only, so the journal records its writes as any other statements, and it must be as
   * deterministic as `up`. Never changed once shipped either (the checksum covers `up` alone).
   */
  backfill?: (tx: Tx) => void
}

export interface DatabaseStats {
  /** Size of the current journal file, header included. */
  journalBytes: number
  /**
   * Sequence number of the last committed journal record (durable or not yet). One record holds every
   * transaction of one event-loop tick, so it advances once per tick, not once per `transaction()`.
   */
  lastSeq: number
  /** Sequence number of the last transaction known to be on disk. */
  durableSeq: number
  /** Checkpoints completed since open. */
  checkpoints: number
  /** Journal writes, each followed by one fdatasync; below the commit count when commits were grouped. */
  flushes: number
  /** Journal records committed in memory that are not yet on disk. */
  pendingCommits: number
  /**
   * How long the last checkpoint since open took, from sealing the journal to the sealed journal being
   * removed (mostly the worker thread's build); null before one.
   */
  lastCheckpointMs: number | null
  /** Of that, the export of the database on the main thread: 0 since the worker thread exports. */
  lastCheckpointExportMs: number | null
  /**
   * Of that, the time the main thread spent in the checkpoint's synchronous parts (sealing the tick,
   * starting the worker, bookkeeping): how long the checkpoint blocked the event loop. Optional only
   * for stats built elsewhere; the database always sets it.
   */
  lastCheckpointBlockedMs?: number | null
  /** Size of the snapshot the last checkpoint since open wrote; null before one. */
  lastSnapshotBytes: number | null
  /** Size of the database now (page_count × page_size, read without an export): roughly the next snapshot's size. */
  databaseBytes: number
  /**
   * PostgreSQL only: statements sent to the server since open (transaction control included, each counted), and the
   * round trips the event loop waited for. What a message costs is measured with them (node/db/README.md).
   */
  statements?: number
  roundTrips?: number
}
