import { DatabaseError, asError } from './errors.js'
import type { Row, RunOptions, RunResult, SqlParams, Tx } from './types.js'

/**
 * What every engine's `tx` handle enforces: it is valid only while its function runs, and any error poisons it, so
 * later calls throw and its savepoint rolls back even if the function swallowed the error. An engine's handle says
 * how a statement runs (`run`, `exec`, `select`); reads go through `select` under the guard here.
 */
export abstract class GuardedTx implements Tx {
  private active = true
  private failure: Error | undefined

  /** The error that poisoned the transaction, if any. */
  get poisoned(): Error | undefined {
    return this.failure
  }

  /** Called when the function returns or throws; the handle is useless afterwards (e.g. after an await). */
  end(): void {
    this.active = false
  }

  abstract run(sql: string, params?: SqlParams, options?: RunOptions): RunResult
  abstract exec(sql: string): void

  /** At once, unless an engine queues it (see Tx.write). */
  write(sql: string, params?: SqlParams): void {
    this.run(sql, params, { rowid: false })
  }
  /** Up to `limit` rows of `sql` (a statement that may write included), unguarded. */
  protected abstract select(sql: string, params: SqlParams | undefined, limit: number): Row[]

  all<R extends Row = Row>(sql: string, params?: SqlParams): R[] {
    return this.guard(() => this.select(sql, params, Infinity)) as R[]
  }

  get<R extends Row = Row>(sql: string, params?: SqlParams): R | undefined {
    return this.guard(() => this.select(sql, params, 1))[0] as R | undefined
  }

  protected guard<T>(f: () => T): T {
    if (!this.active) throw new DatabaseError('DB_MISUSE', 'this transaction has ended; tx is only valid while its function runs')
    if (this.failure) {
      throw new DatabaseError('DB_MISUSE', 'an earlier statement in this transaction failed, so it will roll back', { cause: this.failure })
    }
    try {
      return f()
    } catch (err) {
      this.failure = asError(err)
      throw this.failure
    }
  }
}

/**
 * Refuses a transaction function's result that is a promise: the function must be synchronous. Its remainder will
 * fail on the ended tx; nobody else is listening, so that is absorbed here rather than left to become an unhandled
 * rejection that stops the process.
 */
export function refusePromise(result: unknown): void {
  if (typeof result !== 'object' || result === null || typeof (result as { then?: unknown }).then !== 'function') return
  ;(result as PromiseLike<unknown>).then(undefined, () => {})
  throw new DatabaseError('DB_MISUSE', 'the transaction function returned a promise; it must be synchronous (await before or after, not inside)')
}
