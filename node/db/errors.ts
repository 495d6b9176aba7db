/**
 * One error class with a closed set of codes, so callers (and the API's error mapping) can branch on
 * `code` rather than on message text.
 */
export type DatabaseErrorCode =
  /** The journal could not be written or synced: durability is unknown, writes are refused until restart. */
  | 'DB_FAILED'
  | 'DB_CLOSED'
  /** Another live process (or this one) already has the data folder open. */
  | 'DB_LOCKED'
  /** The journal or snapshot is damaged in a way that is not a torn tail from a crash. */
  | 'DB_CORRUPT'
  /** Write SQL that would replay differently (random(), 'now', ...). */
  | 'DB_NONDETERMINISTIC'
  /** The API was used in a way it cannot honour (writes outside a transaction, async fn, bad params). */
  | 'DB_MISUSE'
  | 'DB_MIGRATION'
  /** SQLite rejected a statement (syntax, missing table, ...). */
  | 'DB_SQL'
  /** A UNIQUE, NOT NULL, CHECK or FOREIGN KEY constraint failed. */
  | 'DB_CONSTRAINT'
  /**
   * The database server cannot be reached (PostgreSQL stopped, connection refused or reset): nothing of the refused
   * statement or transaction is known to be stored; the member reconnects by itself. The API answers 503.
   */
  | 'DB_UNAVAILABLE'

export class DatabaseError extends Error {
  override readonly name = 'DatabaseError'

  /** DB_UNAVAILABLE, as the API tells it from other failures (core/errors.ts isTemporarilyUnavailable). */
  get temporarilyUnavailable(): boolean {
    return this.code === 'DB_UNAVAILABLE'
  }

  constructor(
    readonly code: DatabaseErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${code}: ${message}`, options)
  }
}

/**
 * Gives callers a DatabaseError whatever sql.js threw: SQLite's errors arrive as plain Errors carrying
 * only a message, and some binding mistakes as bare strings.
 */
export function asError(err: unknown): DatabaseError {
  if (err instanceof DatabaseError) return err
  if (!(err instanceof Error)) return new DatabaseError('DB_MISUSE', String(err))
  const code = /constraint failed/i.test(err.message) ? 'DB_CONSTRAINT' : 'DB_SQL'
  return new DatabaseError(code, err.message, { cause: err })
}
