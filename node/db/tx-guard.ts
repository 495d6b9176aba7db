import { DatabaseError, asError } from './errors.js'

/**
 * What every engine's `tx` handle enforces: it is valid only while its function runs, and any error poisons it, so
 * later calls throw and its savepoint rolls back even if the function swallowed the error.
 */
export class TxGuard {
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

  run<T>(f: () => T): T {
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

export function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function'
}
