import type { ParleyError } from '../../core/errors.js'
import { diskFullError } from '../disk-full.js'
import { DatabaseError } from '../errors.js'
import { classify, preview, type StatementKind } from '../sql-guard.js'
import type { SqlParams, SqlValue } from '../types.js'
import type { Step, StepFailure } from './bridge-protocol.js'
import { translateStatement, type PgStatement } from './translate.js'

/** A statement translated once and named for pg's prepared statements (parsed once per connection). */
export interface Prepared {
  sql: string
  kind: StatementKind
  pg: PgStatement
  name: string
  /** Appended `RETURNING <identity column>`: the rows it answers give lastInsertRowid. */
  returnsRowid: boolean
}

/** Statement texts past this many are translated on every use rather than kept (a caller building SQL per call). */
const MAX_PREPARED = 4096

/**
 * The PostgreSQL engine's statement cache: each SQL text translated and named once. INSERTs into a table with an
 * identity column (SQLite's INTEGER PRIMARY KEY) get a second form that returns it, used when the caller wants its
 * rowid (`RunOptions.rowid`, on by default).
 */
export class PgStatements {
  private readonly cache = new Map<string, Prepared>()
  private readonly withRowid = new Map<string, Prepared | null>()
  private named = 0
  /** Table → its identity column, read from the schema once it is migrated. */
  identity = new Map<string, string>()

  get(sql: string): Prepared {
    let p = this.cache.get(sql)
    if (p) return p
    const kind = classify(sql)
    if (kind === 'forbidden') throw new DatabaseError('DB_MISUSE', `transaction control is managed by Database.transaction(): ${preview(sql)}`)
    p = { sql, kind, pg: translateStatement(sql), name: `parley_${++this.named}`, returnsRowid: false }
    if (this.cache.size < MAX_PREPARED) this.cache.set(sql, p)
    else p.name = ''
    return p
  }

  /** The form of an INSERT that returns its rows' identity, if its table has one; undefined otherwise. */
  returningRowid(p: Prepared): Prepared | undefined {
    const known = this.withRowid.get(p.sql)
    if (known !== undefined) return known ?? undefined
    const table = /^\s*INSERT\s+INTO\s+(\w+)/i.exec(p.sql)?.[1]
    const column = table === undefined ? undefined : this.identity.get(table.toLowerCase())
    const r = column === undefined || /\bRETURNING\b/i.test(p.sql) ? null : { ...p, pg: { ...p.pg, text: `${p.pg.text} RETURNING ${column} AS parley_rowid` }, name: `parley_${++this.named}`, returnsRowid: true }
    if (this.withRowid.size < MAX_PREPARED) this.withRowid.set(p.sql, r)
    return r ?? undefined
  }
}

/** The step that runs `p` with the caller's parameters, as PostgreSQL takes them. */
export function stepOf(p: Prepared, params: SqlParams | undefined): Step {
  const { pg } = p
  const values = new Array<unknown>(pg.count)
  const given = params ?? []
  for (let i = 0; i < pg.count; i++) {
    const v: SqlValue | undefined = Array.isArray(given) ? (given as readonly SqlValue[])[i] : pg.names ? (given as Readonly<Record<string, SqlValue>>)[pg.names[i]!] : undefined
    values[i] = pgValue(v ?? null, i, pg)
  }
  return p.name ? { text: pg.text, values, name: p.name } : { text: pg.text, values }
}

function pgValue(v: SqlValue, i: number, pg: PgStatement): unknown {
  if (pg.arrays.has(i)) {
    if (typeof v !== 'string') throw new DatabaseError('DB_MISUSE', `parameter ${i + 1} is an IN list: bind inList(values)`)
    return JSON.parse(v) as unknown[]
  }
  if (v instanceof Uint8Array) return pg.utf8.has(i) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8') : Buffer.from(v.buffer, v.byteOffset, v.byteLength)
  if (typeof v === 'bigint') return v.toString()
  return v
}

/**
 * A failed step as the node's errors: DB_UNAVAILABLE (503) when the database cannot serve now, the node's STORAGE_FULL
 * (507, as on sql.js) when its disk is full, else the closed set of DatabaseError codes. `where` names the database.
 */
export function errorOf(f: StepFailure, where: string, sql?: string): DatabaseError | ParleyError<'STORAGE_FULL'> {
  if (f.unavailable) return unavailableOf(f, where)
  if (f.sqlState === '53100') return diskFullError({ since: new Date().toISOString(), detail: `${where}: ${f.message}` })
  const code = f.sqlState?.startsWith('23') ? 'DB_CONSTRAINT' : 'DB_SQL'
  const statement = sql ?? f.statement
  return new DatabaseError(code, `${f.message}${f.sqlState ? ` (SQLSTATE ${f.sqlState})` : ''}${statement ? `: ${preview(statement)}` : ''}`)
}

export function unavailableOf(f: StepFailure, where: string): DatabaseError {
  return new DatabaseError('DB_UNAVAILABLE', `the database ${where} is unavailable: ${f.message}${f.sqlState ? ` (SQLSTATE ${f.sqlState})` : ''}`)
}
