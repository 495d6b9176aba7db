import type { Database as SqlJsDatabase, Statement } from 'sql.js'
import { DatabaseError, asError } from './errors.js'
import { assertDeterministic, classify, inserts, preview, type StatementKind } from './sql-guard.js'

export interface Prepared {
  readonly sql: string
  readonly stmt: Statement
  readonly kind: StatementKind
  /** INSERT or REPLACE: its result reports the new rowid. */
  readonly inserts: boolean
  /** Whether the text passed the determinism check; computed the first time it is used to write. */
  deterministic?: DatabaseError | true
}

/**
 * Prepared statements keyed by SQL text, least recently used evicted first. Preparing (parsing and
 * planning) costs far more than executing a small statement, and the repositories reuse a fixed set of
 * SQL strings. The bound keeps memory flat if some caller builds SQL dynamically.
 */
export class StatementCache {
  private readonly entries = new Map<string, Prepared>()

  constructor(
    private readonly db: SqlJsDatabase,
    private readonly capacity = 512,
  ) {}

  get(sql: string): Prepared {
    const hit = this.entries.get(sql)
    if (hit) {
      // Re-insert to mark it most recently used (Map keeps insertion order).
      this.entries.delete(sql)
      this.entries.set(sql, hit)
      return hit
    }
    assertSingleStatement(this.db, sql)
    let stmt: Statement
    try {
      stmt = this.db.prepare(sql)
    } catch (err) {
      throw asError(err)
    }
    const prepared: Prepared = { sql, stmt, kind: classify(sql), inserts: inserts(sql) }
    this.entries.set(sql, prepared)
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next()
      if (!oldest.done) this.evict(oldest.value)
    }
    return prepared
  }

  /** Throws DB_NONDETERMINISTIC for write SQL that would replay differently; the verdict is cached. */
  checkDeterministic(p: Prepared): void {
    if (p.deterministic === undefined) {
      try {
        assertDeterministic(p.sql)
        p.deterministic = true
      } catch (err) {
        p.deterministic = err instanceof DatabaseError ? err : new DatabaseError('DB_NONDETERMINISTIC', String(err))
      }
    }
    if (p.deterministic !== true) throw p.deterministic
  }

  clear(): void {
    for (const sql of [...this.entries.keys()]) this.evict(sql)
  }

  private evict(sql: string): void {
    const p = this.entries.get(sql)
    this.entries.delete(sql)
    p?.stmt.free()
  }
}

/**
 * sqlite3_prepare compiles only the first statement of a string and sql.js drops the rest silently,
 * so `run('INSERT ...; INSERT ...')` would lose the second insert. Counting statements once per
 * distinct text (the cache makes that rare) turns that into an error.
 */
function assertSingleStatement(db: SqlJsDatabase, sql: string): void {
  let count = 0
  try {
    for (const _ of db.iterateStatements(sql)) {
      if (++count > 1) break
    }
  } catch (err) {
    throw asError(err)
  }
  if (count !== 1) {
    throw new DatabaseError(
      'DB_MISUSE',
      `${count === 0 ? 'no statement' : 'several statements'} in one call; use tx.exec() for a script: ${preview(sql)}`,
    )
  }
}
