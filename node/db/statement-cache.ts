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
 *
 * Recency is a use counter on each entry rather than the Map's insertion order: a hit is then one lookup and
 * one store, where moving the entry to the end (delete + set) cost ~1 % of a sending member's CPU, every
 * statement of every request. Only a miss past the capacity, rare with fixed SQL, scans for the oldest entry.
 */
export class StatementCache {
  private readonly entries = new Map<string, Entry>()
  private clock = 0

  constructor(
    private readonly db: SqlJsDatabase,
    private readonly capacity = 512,
  ) {}

  get(sql: string): Prepared {
    const hit = this.entries.get(sql)
    if (hit) {
      hit.used = ++this.clock
      return hit.prepared
    }
    // Statements are separated by semicolons: a text without one holds one statement at most, and one that holds
    // none (blank, or a comment) is refused by prepare below. Counting parses the text a second time, which every new
    // statement of a member's start paid.
    const mayHoldSeveral = sql.includes(';')
    if (mayHoldSeveral) assertSingleStatement(this.db, sql)
    let stmt: Statement
    try {
      stmt = this.db.prepare(sql)
    } catch (err) {
      if (!mayHoldSeveral && (err === NOTHING_TO_PREPARE || (err instanceof Error && err.message === NOTHING_TO_PREPARE))) throw misuse(0, sql)
      throw asError(err)
    }
    const prepared: Prepared = { sql, stmt, kind: classify(sql), inserts: inserts(sql) }
    this.entries.set(sql, { prepared, used: ++this.clock })
    if (this.entries.size > this.capacity) this.evict(this.leastRecentlyUsed())
    return prepared
  }

  /** How many statements are prepared now. */
  get size(): number {
    return this.entries.size
  }

  /** Whether `sql` is prepared now (without counting as a use). */
  has(sql: string): boolean {
    return this.entries.has(sql)
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

  private leastRecentlyUsed(): string {
    let oldest: string | undefined
    let oldestUse = Infinity
    for (const [sql, e] of this.entries) {
      if (e.used < oldestUse) {
        oldest = sql
        oldestUse = e.used
      }
    }
    return oldest as string
  }

  private evict(sql: string): void {
    const e = this.entries.get(sql)
    this.entries.delete(sql)
    e?.prepared.stmt.free()
  }
}

interface Entry {
  readonly prepared: Prepared
  /** The cache's clock at the last use: the smallest is evicted first. */
  used: number
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
  if (count !== 1) throw misuse(count, sql)
}

/** What sql.js throws (a string, not an Error) when a text holds no statement. */
const NOTHING_TO_PREPARE = 'Nothing to prepare'

function misuse(count: number, sql: string): DatabaseError {
  return new DatabaseError('DB_MISUSE', `${count === 0 ? 'no statement' : 'several statements'} in one call; use tx.exec() for a script: ${preview(sql)}`)
}
