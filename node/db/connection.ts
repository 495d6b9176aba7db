import type { Database as SqlJsDatabase } from 'sql.js'
import { DatabaseError, asError } from './errors.js'
import { ParamBinder } from './param-binder.js'
import { RowReader } from './row-reader.js'
import { openInMemoryRaw } from './sqljs.js'
import { assertDeterministic, classify, preview } from './sql-guard.js'
import { StatementCache, type Prepared } from './statement-cache.js'
import type { Row, RunResult, SqlParams } from './types.js'

/**
 * Connection settings, applied on open, before replay, so live execution and replay behave the same.
 * The database lives in memory (see openInMemory), so SQLite's own rollback journal, syncs and
 * file locks protect nothing a crash would not wipe anyway: keep the rollback journal in memory (it is
 * still needed for ROLLBACK), skip syncs, and take the lock once. Together these cut the CPU cost
 * of a small transaction several times over.
 */
const PRAGMAS = [
  'PRAGMA journal_mode = MEMORY',
  'PRAGMA synchronous = OFF',
  'PRAGMA locking_mode = EXCLUSIVE',
  'PRAGMA temp_store = MEMORY',
  'PRAGMA foreign_keys = ON',
]

const SAVEPOINT = 'parley_tx'

/**
 * One sql.js database with the statement cache and the transaction primitives. It knows nothing of
 * files: durability is layered on top (journal, committer, checkpoints).
 */
export class Connection {
  private readonly cache: StatementCache
  private pageSize: number | undefined

  private constructor(
    private readonly db: SqlJsDatabase,
    private readonly binder: ParamBinder,
    private readonly reader: RowReader,
  ) {
    this.cache = new StatementCache(db)
    this.applyPragmas()
  }

  /** Opens an empty database, or one loaded from snapshot bytes. */
  static async open(snapshot?: Uint8Array): Promise<Connection> {
    const { db, raw } = await openInMemoryRaw(snapshot)
    return new Connection(db, new ParamBinder(raw), new RowReader(raw))
  }

  begin(): void {
    this.internal('BEGIN')
  }

  commit(): void {
    this.internal('COMMIT')
  }

  /** Rolls back if a transaction is open; SQLite may already have rolled it back (e.g. OR ROLLBACK). */
  rollback(): void {
    try {
      this.internal('ROLLBACK')
    } catch {
      // "cannot rollback - no transaction is active": nothing left to undo.
    }
  }

  /** Opens the savepoint one transaction function runs in, inside the tick's transaction. */
  savepoint(): void {
    this.internal(`SAVEPOINT ${SAVEPOINT}`)
  }

  release(): void {
    this.internal(`RELEASE ${SAVEPOINT}`)
  }

  /**
   * Undoes the current function's effects and closes its savepoint. Returns false when the savepoint
   * is gone because SQLite rolled back the whole transaction (OR ROLLBACK, RAISE(ROLLBACK), out of memory).
   */
  rollbackSavepoint(): boolean {
    try {
      this.internal(`ROLLBACK TO ${SAVEPOINT}`)
    } catch {
      return false
    }
    this.internal(`RELEASE ${SAVEPOINT}`)
    return true
  }

  /**
   * The database's size: pages in use times page size, read from the pager, without an export. The page size is read
   * once (it is fixed once the database has a page); a plain PRAGMA costs half of joining the two pragma functions,
   * and a sending member reads the size on every event-loop turn it admits sends in.
   */
  sizeBytes(): number {
    this.pageSize ??= this.pragmaNumber('PRAGMA page_size')
    return this.pragmaNumber('PRAGMA page_count') * this.pageSize
  }

  private pragmaNumber(sql: string): number {
    const row = this.query(this.cache.get(sql), undefined, 1)[0]
    const n = row ? Object.values(row)[0] : undefined
    return typeof n === 'number' ? n : 0
  }

  /** Prepares (or reuses) a statement; the caller decides from its kind whether it must be journaled. */
  prepare(sql: string): Prepared {
    const p = this.cache.get(sql)
    if (p.kind === 'forbidden') {
      throw new DatabaseError('DB_MISUSE', `transaction control is managed by Database.transaction(): ${preview(sql)}`)
    }
    return p
  }

  checkDeterministic(p: Prepared): void {
    this.cache.checkDeterministic(p)
  }

  /** Executes a prepared statement to completion, ignoring rows; reports what it changed, and its rowid unless told not to. */
  execute(p: Prepared, params: SqlParams | undefined, withRowid = true): RunResult {
    this.step(p, params)
    const changes = this.db.getRowsModified()
    // One more statement per INSERT that asks; other statements skip it (their rowid would be a stale one).
    if (!p.inserts || !withRowid) return { changes, lastInsertRowid: 0 }
    const rowid = this.query(this.cache.get('SELECT last_insert_rowid() AS id'), undefined, 1)[0]?.['id']
    return { changes, lastInsertRowid: typeof rowid === 'number' ? rowid : Number(rowid ?? 0) }
  }

  /** Executes a prepared statement to completion, ignoring rows (replay needs nothing more). */
  step(p: Prepared, params: SqlParams | undefined): void {
    const { stmt } = p
    try {
      if (params !== undefined) this.binder.bind(stmt, params)
      while (stmt.step()) {
        // Step to the end: a RETURNING statement finishes its work only when fully stepped.
      }
    } catch (err) {
      throw asError(err)
    } finally {
      stmt.reset()
    }
  }

  /** Up to `limit` rows as objects keyed by column name. */
  query(p: Prepared, params: SqlParams | undefined, limit: number): Row[] {
    const { stmt } = p
    try {
      if (params !== undefined) this.binder.bind(stmt, params)
      const names = stmt.getColumnNames()
      const rows: Row[] = []
      while (rows.length < limit && stmt.step()) rows.push(this.reader.row(stmt, names))
      return rows
    } catch (err) {
      throw asError(err)
    } finally {
      stmt.reset()
    }
  }

  /** Runs a parameterless multi-statement script (a migration) inside the current transaction. */
  script(sql: string): void {
    assertDeterministic(sql)
    try {
      for (const stmt of this.db.iterateStatements(sql)) {
        if (classify(stmt.getSQL()) === 'forbidden') {
          throw new DatabaseError('DB_MISUSE', `scripts must not control transactions: ${preview(stmt.getSQL())}`)
        }
        while (stmt.step()) {
          // Scripts are for schema changes; any rows they return are not wanted.
        }
      }
    } catch (err) {
      throw asError(err)
    }
  }

  /**
   * The database file's bytes. sql.js (pinned at 1.16) copies them through SQLite's backup API and keeps the
   * connection, its prepared statements and its pragmas; test/db checks that it still does.
   */
  export(): Uint8Array {
    return this.db.export()
  }

  close(): void {
    this.cache.clear()
    this.binder.release()
    this.db.close()
  }

  private internal(sql: string): void {
    const { stmt } = this.cache.get(sql)
    try {
      stmt.step()
    } catch (err) {
      throw asError(err)
    } finally {
      stmt.reset()
    }
  }

  private applyPragmas(): void {
    for (const p of PRAGMAS) this.db.exec(p)
  }
}
