import { ParleyError } from '../core/errors.js'
import { timestampSortKey } from '../core/time.js'
import type { Filter, FilterCondition, FilterOp } from '../model/index.js'
import type { QueryField, QueryFields } from './query-fields.js'

export interface SqlWhere {
  sql: string
  params: (string | number)[]
}

/**
 * Turns a parsed filter into a WHERE fragment over a collection's fields: groups AND together, the conditions of a
 * group OR. A field the collection does not have, or a value its kind cannot take, is the caller's mistake.
 */
export function filterSql(filter: Filter | undefined, fields: QueryFields): SqlWhere | undefined {
  if (!filter || filter.length === 0) return undefined
  const params: (string | number)[] = []
  const groups = filter.map((group) => {
    const ors = group.map((c) => conditionSql(c, fieldOf(c.field, fields), params))
    return ors.length === 1 ? ors[0]! : `(${ors.join(' OR ')})`
  })
  return { sql: groups.join(' AND '), params }
}

/** Adds a filter to the conditions a repository ANDs together in its list query. */
export function andWhere(conds: string[], params: (string | number)[], where: SqlWhere | undefined): void {
  if (!where) return
  conds.push(`(${where.sql})`)
  params.push(...where.params)
}

function fieldOf(name: string, fields: QueryFields): QueryField {
  // Own fields only: `__proto__` or `constructor` from a query string must not find Object's.
  const key = name.toLowerCase()
  const f = Object.hasOwn(fields, key) ? fields[key] : undefined
  if (!f) throw new ParleyError('INVALID_FILTER', `unknown filter field ${JSON.stringify(name)}; filterable: ${Object.keys(fields).join(', ')}`)
  return f
}

const LIKE_PATTERNS: Partial<Record<FilterOp, (escaped: string) => string>> = {
  contains: (v) => `%${v}%`,
  startswith: (v) => `${v}%`,
  endswith: (v) => `%${v}`,
}
const COMPARISONS: Partial<Record<FilterOp, string>> = { eq: '=', gt: '>', gte: '>=', lt: '<', lte: '<=' }

function conditionSql(c: FilterCondition, field: QueryField, params: (string | number)[]): string {
  // Case only means something for text: a lowered number or time key would compare as text, wrongly.
  const fold = c.caseInsensitive && field.kind === 'text'
  const col = fold ? `LOWER(${field.column})` : field.column
  const val = fold ? c.value.toLowerCase() : c.value
  let sql: string
  const like = LIKE_PATTERNS[c.op]
  if (like) {
    params.push(like(val.replace(/[\\%_]/g, (ch) => `\\${ch}`)))
    sql = `${col} LIKE ? ESCAPE '\\'`
  } else {
    params.push(typed(c, field, val))
    sql = `${col} ${COMPARISONS[c.op] ?? '='} ?`
  }
  return c.not ? `NOT (${sql})` : sql
}

function typed(c: FilterCondition, field: QueryField, val: string): string | number {
  if (field.kind === 'number') {
    if (!/^-?\d+$/.test(val)) throw new ParleyError('INVALID_FILTER', `${c.field} needs a whole number: ${JSON.stringify(c.value)}`)
    return Number(val)
  }
  if (field.kind === 'time') return timeKey(c.field, val)
  return val
}

/**
 * Time filters accept RFC3339 or Unix seconds, milliseconds or nanoseconds (scaled by magnitude), as FireFly does.
 * A UTC RFC3339 value keeps all nine fractional digits, as the stored keys do.
 */
function timeKey(name: string, v: string): string {
  const bad = (): never => {
    throw new ParleyError('INVALID_FILTER', `${name} needs a time (RFC3339 or Unix): ${JSON.stringify(v)}`)
  }
  if (/^\d+$/.test(v)) {
    const n = BigInt(v)
    const ms = n > 10n ** 17n ? n / 1_000_000n : n > 10n ** 11n ? n : n * 1000n
    const iso = safeIso(Number(ms))
    return iso === undefined ? bad() : timestampSortKey(iso)
  }
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/.test(v)) {
    // Date rolls 30 February over into March; a time that does not read back the same is not one.
    return safeIso(Date.parse(`${v.slice(0, 19)}Z`))?.slice(0, 19) === v.slice(0, 19) ? timestampSortKey(v) : bad()
  }
  // A date, or a time with its zone or offset: a bare local time would depend on this machine's time zone.
  if (!/^\d{4}-\d{2}-\d{2}$/.test(v) && !/(Z|[+-]\d{2}:\d{2})$/i.test(v)) bad()
  const iso = safeIso(new Date(v).getTime())
  return iso === undefined ? bad() : timestampSortKey(iso)
}

/** An instant as `YYYY-MM-DDTHH:MM:SS.sssZ`, or undefined when it has no such form (invalid, or past year 9999). */
function safeIso(ms: number): string | undefined {
  if (!Number.isFinite(ms)) return undefined
  const d = new Date(ms)
  if (Number.isNaN(d.getTime())) return undefined
  const iso = d.toISOString()
  return /^\d{4}-/.test(iso) ? iso : undefined
}
