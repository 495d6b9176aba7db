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
  const f = fields[name.toLowerCase()]
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
  const col = c.caseInsensitive ? `LOWER(${field.column})` : field.column
  const val = c.caseInsensitive ? c.value.toLowerCase() : c.value
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

/** Time filters accept RFC3339 or Unix seconds, milliseconds or nanoseconds (scaled by magnitude), as FireFly does. */
function timeKey(name: string, v: string): string {
  if (/^\d+$/.test(v)) {
    const n = BigInt(v)
    const ms = n > 10n ** 17n ? n / 1_000_000n : n > 10n ** 11n ? n : n * 1000n
    return timestampSortKey(new Date(Number(ms)).toISOString().replace(/\.000Z$/, 'Z'))
  }
  const d = new Date(v)
  if (Number.isNaN(d.getTime())) throw new ParleyError('INVALID_FILTER', `${name} needs a time (RFC3339 or Unix): ${JSON.stringify(v)}`)
  return timestampSortKey(d.toISOString())
}
