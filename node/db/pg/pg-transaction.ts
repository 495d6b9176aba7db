import { DatabaseError } from '../errors.js'
import { validateParams } from '../journal-record.js'
import { preview } from '../sql-guard.js'
import { GuardedTx } from '../tx-guard.js'
import type { Row, RunOptions, RunResult, SqlParams } from '../types.js'
import type { BridgeReply, Step } from './bridge-protocol.js'
import { translateDdl } from './ddl.js'
import { stepOf, type PgStatements } from './statements.js'

/** What a PostgreSQL transaction function's statements go through: the database's round trip, errors mapped. */
export interface PgRunner {
  readonly statements: PgStatements
  /** Sends the steps (after whatever is deferred) and returns the reply, or throws the mapped error. */
  roundTrip(steps: Step[], sql: string | undefined, read: boolean): Extract<BridgeReply, { ok: true }>
  /** Defers a write whose result nobody reads: it goes with the next round trip. */
  queue(step: Step): void
}

/**
 * The `tx` a transaction function gets on PostgreSQL. As on sql.js, any error poisons it: later calls throw, and the
 * function's savepoint rolls back even if the function swallowed the error (PostgreSQL itself refuses every
 * statement after a failed one until then).
 */
export class PgTransaction extends GuardedTx {
  /** Whether a statement that may write ran: a function that only read does not wait for the turn's COMMIT. */
  wrote = false

  constructor(private readonly db: PgRunner) {
    super()
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

  /**
   * Queued, not sent: it goes with the function's next statement that needs an answer, or, once the function returned,
   * as a group with the turn's next round trip or its COMMIT (pg-database.ts), so that a function of several writes
   * costs one round trip, or none.
   */
  override write(sql: string, params?: SqlParams): void {
    this.guard(() => {
      validateParams(params)
      const p = this.db.statements.get(sql)
      if (p.kind === 'read') throw new DatabaseError('DB_MISUSE', `tx.write is for statements that write; use get or all: ${preview(sql)}`)
      this.wrote = true
      this.db.queue(stepOf(p, params))
    })
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

  protected select(sql: string, params: SqlParams | undefined, limit: number): Row[] {
    validateParams(params)
    const p = this.db.statements.get(sql)
    if (p.kind !== 'read') this.wrote = true
    const rows = this.db.roundTrip([stepOf(p, params)], sql, p.kind === 'read').rows as Row[]
    return rows.length > limit ? rows.slice(0, limit) : rows
  }
}
