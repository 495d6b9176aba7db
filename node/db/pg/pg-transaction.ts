import { validateParams } from '../journal-record.js'
import { TxGuard } from '../tx-guard.js'
import type { Row, RunOptions, RunResult, SqlParams, Tx } from '../types.js'
import type { BridgeReply, Step } from './bridge-protocol.js'
import { translateDdl } from './ddl.js'
import { stepOf, type PgStatements } from './statements.js'

/** What a PostgreSQL transaction function's statements go through: the database's round trip, errors mapped. */
export interface PgRunner {
  readonly statements: PgStatements
  /** Sends the steps (after whatever is deferred) and returns the reply, or throws the mapped error. */
  roundTrip(steps: Step[], sql: string, read: boolean): Extract<BridgeReply, { ok: true }>
}

/**
 * The `tx` a transaction function gets on PostgreSQL. As on sql.js, any error poisons it: later calls throw, and the
 * function's savepoint rolls back even if the function swallowed the error (PostgreSQL itself refuses every
 * statement after a failed one until then).
 */
export class PgTransaction implements Tx {
  private readonly state = new TxGuard()
  /** Whether a statement that may write ran: a function that only read does not wait for the turn's COMMIT. */
  wrote = false

  constructor(private readonly db: PgRunner) {}

  get poisoned(): Error | undefined {
    return this.state.poisoned
  }

  end(): void {
    this.state.end()
  }

  run(sql: string, params?: SqlParams, options?: RunOptions): RunResult {
    return this.guard(() => {
      validateParams(params)
      const plain = this.db.statements.get(sql)
      const p = plain.kind !== 'read' && options?.rowid !== false ? (this.db.statements.returningRowid(plain) ?? plain) : plain
      if (p.kind !== 'read') this.wrote = true
      const r = this.db.roundTrip([stepOf(p, params)], sql, p.kind === 'read')
      const last = p.returnsRowid ? r.rows[r.rows.length - 1]?.['parley_rowid'] : undefined
      return { changes: r.rowCount, lastInsertRowid: typeof last === 'number' ? last : 0 }
    })
  }

  all<R extends Row = Row>(sql: string, params?: SqlParams): R[] {
    return this.guard(() => this.select(sql, params, Infinity)) as R[]
  }

  get<R extends Row = Row>(sql: string, params?: SqlParams): R | undefined {
    return this.guard(() => this.select(sql, params, 1))[0] as R | undefined
  }

  /**
   * A parameterless script: schema changes, written in SQLite's DDL and translated (ddl.ts). Without a statement
   * timeout: a migration that rebuilds a large table must not fail at every start for taking long.
   */
  exec(sql: string): void {
    this.guard(() => {
      this.wrote = true
      this.db.roundTrip([{ text: `SET LOCAL statement_timeout = 0;\n${translateDdl(sql)}` }], sql, false)
    })
  }

  private select(sql: string, params: SqlParams | undefined, limit: number): Row[] {
    validateParams(params)
    const p = this.db.statements.get(sql)
    if (p.kind !== 'read') this.wrote = true
    const rows = this.db.roundTrip([stepOf(p, params)], sql, p.kind === 'read').rows as Row[]
    return rows.length > limit ? rows.slice(0, limit) : rows
  }

  private guard<T>(f: () => T): T {
    return this.state.run(f)
  }
}
