import { DatabaseError } from '../errors.js'
import { IN_LIST, TEXT_FROM_BYTES } from '../in-list.js'
import { closingParen, maskLiterals, splitArgs } from './sql-text.js'

/**
 * One statement as PostgreSQL runs it: the repositories' SQLite SQL with its placeholders numbered (`$1`...) and its
 * SQLite-only functions replaced, plus how to turn the caller's parameters into PostgreSQL's. Made once per SQL text.
 */
export interface PgStatement {
  text: string
  /** Parameters the text takes ($1..$count). */
  count: number
  /** For named parameters (`:id`), the caller's key for each $n in order; undefined for positional ones. */
  names: readonly string[] | undefined
  /** $n (0-based) that are an IN list: the caller binds its JSON array text (inList), PostgreSQL takes an array. */
  arrays: ReadonlySet<number>
  /** $n (0-based) that are text bound as UTF-8 bytes (TEXT_FROM_BYTES): PostgreSQL takes the text itself. */
  utf8: ReadonlySet<number>
}

const ARRAY_MARK = '/*parley:array*/'
const UTF8_MARK = '/*parley:utf8*/'

/**
 * SQLite functions the repositories use that PostgreSQL lacks or spells differently, by lower-case name, each given
 * its (already translated) arguments. Returning undefined keeps the call as written (MAX/MIN of one argument are the
 * aggregates both engines have).
 */
const FUNCTIONS: Readonly<Record<string, (args: string[]) => string | undefined>> = {
  json_extract: (a) => (a.length === 2 ? `((${a[0]})::jsonb #>> ${jsonPath(a[1]!)})` : undefined),
  // Its elements are jsonb, under the column name SQLite's json_each gives them (`value`).
  json_each: (a) => (a.length === 1 ? `jsonb_array_elements((${a[0]})::jsonb)` : undefined),
  instr: (a) => (a.length === 2 ? `strpos(${a[0]}, ${a[1]})` : undefined),
  group_concat: (a) => (a.length === 2 ? `string_agg(${a[0]}, ${a[1]})` : a.length === 1 ? `string_agg(${a[0]}, ',')` : undefined),
  // As text, as SQLite returns it: callers parse it. Over no rows SQLite answers '[]', json_agg NULL.
  json_group_array: (a) => (a.length === 1 ? `COALESCE(json_agg(${a[0]})::text, '[]')` : undefined),
  ifnull: (a) => (a.length === 2 ? `COALESCE(${a[0]}, ${a[1]})` : undefined),
  max: (a) => (a.length >= 2 ? `GREATEST(${a.join(', ')})` : undefined),
  min: (a) => (a.length >= 2 ? `LEAST(${a.join(', ')})` : undefined),
}

const FUNCTION_RE = new RegExp(`\\b(${Object.keys(FUNCTIONS).join('|')})\\s*\\(`, 'gi')

/** A SQLite JSON path literal ('$.tx.type', '$[1]') as a PostgreSQL text-array path ('{tx,type}', '{1}'). */
function jsonPath(literal: string): string {
  const m = /^'\$((?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*)'$/.exec(literal.trim())
  if (!m) throw new DatabaseError('DB_SQL', `json_extract path ${literal} is not one the PostgreSQL dialect translates ('$.name' and '$[n]' steps)`)
  const steps = [...m[1]!.matchAll(/\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]/g)].map((s) => s[1] ?? s[2]!)
  return `'{${steps.join(',')}}'`
}

/** Replaces the SQLite-only function calls of `sql`, innermost first. */
export function rewriteFunctions(sql: string): string {
  const masked = maskLiterals(sql)
  let out = ''
  let at = 0
  FUNCTION_RE.lastIndex = 0
  for (let m = FUNCTION_RE.exec(masked); m; m = FUNCTION_RE.exec(masked)) {
    const open = m.index + m[0].length - 1
    const close = closingParen(masked, open)
    if (close < 0) break
    const args = splitArgs(sql, masked, open, close).map(rewriteFunctions)
    const replaced = FUNCTIONS[m[1]!.toLowerCase()]!(args)
    if (replaced === undefined) {
      // Kept as written, but its arguments may hold calls to replace.
      out += sql.slice(at, open + 1) + args.join(', ') + ')'
    } else out += sql.slice(at, m.index) + replaced
    at = close + 1
    FUNCTION_RE.lastIndex = close + 1
  }
  return out + sql.slice(at)
}

/**
 * Translates one statement of the repositories' SQL (SQLite's) for PostgreSQL:
 * - IN_LIST (`IN (SELECT value FROM json_each(?))`) becomes `= ANY($n)`, its JSON text bound as an array;
 * - TEXT_FROM_BYTES (`CAST(? AS TEXT)`) keeps its cast, its bytes bound as the text they encode;
 * - SQLite's functions become PostgreSQL's (FUNCTIONS); `LIKE` becomes `ILIKE` (SQLite's LIKE ignores ASCII case);
 * - placeholders `?`, `?NNN` and `:name` become `$n`, numbered as SQLite numbers them.
 */
export function translateStatement(sql: string): PgStatement {
  let text = sql.split(IN_LIST).join(`= ANY(?${ARRAY_MARK})`)
  text = text.split(TEXT_FROM_BYTES).join(`CAST(?${UTF8_MARK} AS TEXT)`)
  text = rewriteFunctions(text)
  text = replaceCode(text, /\bLIKE\b/gi, () => 'ILIKE')
  // A hint to SQLite's planner; PostgreSQL's chooses its index itself.
  text = replaceCode(text, /\s+INDEXED\s+BY\s+\w+|\s+NOT\s+INDEXED\b/gi, () => '')
  text = qualifyUpsert(text)
  return numberPlaceholders(text)
}

/** Words of an upsert's SET expressions that are not columns of the target row. */
const NOT_COLUMNS = new Set(['and', 'or', 'not', 'null', 'is', 'in', 'case', 'when', 'then', 'else', 'end', 'excluded', 'true', 'false', 'like', 'ilike', 'between', 'cast', 'as', 'bigint', 'integer', 'text', 'distinct'])

/**
 * In `INSERT INTO t ... ON CONFLICT ... DO UPDATE SET c = <expr>`, SQLite reads a bare column of <expr> as the
 * existing row's; PostgreSQL finds it ambiguous with the `excluded` row, so each one gets the table's name.
 */
function qualifyUpsert(sql: string): string {
  const masked = maskLiterals(sql)
  const table = /^\s*INSERT\s+INTO\s+(\w+)/i.exec(masked)?.[1]
  const set = /\bDO\s+UPDATE\s+SET\b/i.exec(masked)
  if (!table || !set) return sql
  const from = set.index + set[0].length
  const rest = masked.slice(from)
  const stop = rest.search(/\bRETURNING\b/i)
  const to = stop < 0 ? masked.length : from + stop
  let out = sql.slice(0, from)
  // Each assignment's right-hand side: after its `=` at depth 0, to the next comma at depth 0.
  let depth = 0
  let rhs = false
  let at = from
  for (let i = from; i <= to; i++) {
    const c = i < to ? masked[i] : ','
    if (c === '(') depth++
    else if (c === ')') depth--
    else if (depth === 0 && c === '=' && !rhs) {
      out += sql.slice(at, i + 1)
      at = i + 1
      rhs = true
    } else if (depth === 0 && c === ',' && rhs) {
      out += qualifyColumns(sql.slice(at, i), masked.slice(at, i), table)
      at = i
      rhs = false
    }
  }
  return out + sql.slice(at)
}

function qualifyColumns(expr: string, masked: string, table: string): string {
  let out = ''
  let at = 0
  for (const m of masked.matchAll(/(?<![.\w'"])([A-Za-z_]\w*)\b(?!\s*[.(])/g)) {
    if (NOT_COLUMNS.has(m[1]!.toLowerCase())) continue
    out += `${expr.slice(at, m.index)}${table}.${m[1]}`
    at = m.index + m[0].length
  }
  return out + expr.slice(at)
}

/** Replaces matches of `re` (global) that lie in code, not in a literal or comment. */
function replaceCode(sql: string, re: RegExp, to: (m: RegExpExecArray) => string): string {
  const masked = maskLiterals(sql)
  let out = ''
  let at = 0
  re.lastIndex = 0
  for (let m = re.exec(masked); m; m = re.exec(masked)) {
    out += sql.slice(at, m.index) + to(m)
    at = m.index + m[0].length
  }
  return out + sql.slice(at)
}

function numberPlaceholders(sql: string): PgStatement {
  const masked = maskLiterals(sql)
  const names: string[] = []
  const arrays = new Set<number>()
  const utf8 = new Set<number>()
  let positional = false
  let largest = 0
  let out = ''
  let at = 0
  const re = /\?(\d*)|(?<![:\w]):([A-Za-z_]\w*)/g
  for (let m = re.exec(masked); m; m = re.exec(masked)) {
    let n: number
    if (m[2] !== undefined) {
      const key = `:${m[2]}`
      const known = names.indexOf(key)
      n = known >= 0 ? known + 1 : names.push(key)
    } else {
      positional = true
      n = m[1] ? Number(m[1]) : largest + 1
    }
    largest = Math.max(largest, n)
    out += `${sql.slice(at, m.index)}$${n}`
    at = m.index + m[0].length
    if (sql.startsWith(ARRAY_MARK, at)) {
      arrays.add(n - 1)
      at += ARRAY_MARK.length
    } else if (sql.startsWith(UTF8_MARK, at)) {
      utf8.add(n - 1)
      at += UTF8_MARK.length
    }
  }
  if (positional && names.length > 0) throw new DatabaseError('DB_MISUSE', 'a statement mixes ? and :name parameters')
  return { text: out + sql.slice(at), count: largest, names: names.length > 0 ? names : undefined, arrays, utf8 }
}
