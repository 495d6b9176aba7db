import type { Connection } from './connection.js'
import { validateParams, type TxOps } from './journal-record.js'
import { GuardedTx } from './tx-guard.js'
import type { Row, RunOptions, RunResult, SqlParams } from './types.js'

/**
 * The `tx` handed to a transaction function. Every statement that can write is recorded, with its
 * values, into the function's part of the tick's journal record as it runs; reads (SELECT, VALUES) are not.
 *
 * Any error poisons the transaction: later calls throw and the function's savepoint rolls back even
 * if the function swallowed the error. A failed statement may have had partial effects (OR FAIL, or
 * SQLite rolling back the whole transaction for OR ROLLBACK), which a replay could not be sure to reproduce.
 */
export class Transaction extends GuardedTx {
  constructor(
    private readonly conn: Connection,
    private readonly record: TxOps,
  ) {
    super()
  }

  run(sql: string, params?: SqlParams, options?: RunOptions): RunResult {
    return this.guard(() => {
      validateParams(params)
      const p = this.conn.prepare(sql)
      if (p.kind !== 'read') {
        this.conn.checkDeterministic(p)
        this.record.addStatement(sql, params)
      }
      return this.conn.execute(p, params, options?.rowid)
    })
  }

  exec(sql: string): void {
    this.guard(() => {
      this.record.addScript(sql)
      this.conn.script(sql)
    })
  }

  protected select(sql: string, params: SqlParams | undefined, limit: number): Row[] {
    validateParams(params)
    const p = this.conn.prepare(sql)
    if (p.kind === 'read') return this.conn.query(p, params, limit)
    // A statement that may write (INSERT ... RETURNING, WITH ... UPDATE) is journaled and fully stepped.
    this.conn.checkDeterministic(p)
    this.record.addStatement(sql, params)
    return this.conn.query(p, params, Infinity).slice(0, limit)
  }
}
