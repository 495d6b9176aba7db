import { ParleyError } from '../core/errors.js'
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
  checkSize(filter)
  const params: (string | number)[] = []
  const groups = filter.map((group) => {
    const ors = group.map((c) => conditionSql(c, fieldOf(c.field, fields), params))
    return ors.length === 1 ? ors[0]! : `(${ors.join(' OR ')})`
  })
  return { sql: groups.join(' AND '), params }
}

/**
 * Conditions in one filter, all fields together. A field's values OR into one chain that SQLite nests one level
 * per condition, and past 1000 levels it refuses the statement ("Expression tree is too large"); far below that,
 * a list of hundreds of alternatives is no longer a query anyone means.
 */
export const MAX_FILTER_CONDITIONS = 100

function checkSize(filter: Filter): void {
  const total = filter.reduce((n, group) => n + group.length, 0)
  if (total <= MAX_FILTER_CONDITIONS) return
  const widest = filter.reduce((a, b) => (b.length > a.length ? b : a))
  throw new ParleyError('INVALID_FILTER', `the filter has ${total} conditions (${widest[0]!.field} given ${widest.length} times); at most ${MAX_FILTER_CONDITIONS} in all`)
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
    // Past 2^53 a JavaScript number is no longer the integer asked for: 2^53 + 1 would compare as 2^53.
    const n = /^-?\d+$/.test(val) ? Number(val) : NaN
    if (!Number.isSafeInteger(n)) throw new ParleyError('INVALID_FILTER', `${c.field} needs a whole number of at most ${Number.MAX_SAFE_INTEGER} either way: ${quote(c.value)}`)
    return n
  }
  if (field.kind === 'time') return timeKey(c.field, val)
  return val
}

/**
 * RFC3339: a date (its UTC midnight), or a date and time with its zone, `Z` or an offset (a bare local time would
 * depend on this machine's time zone); `T`, `t` or a space between them, any digits of fraction (nine are kept).
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2})))?$/

/** The instants a stored key can hold, in whole seconds since 1970: 0000-01-01T00:00:00Z to 9999-12-31T23:59:59Z. */
const FIRST_SECOND = -62_167_219_200n
const LAST_SECOND = 253_402_300_799n

/**
 * Time filters accept RFC3339 or Unix seconds, milliseconds or nanoseconds (scaled by magnitude), as FireFly does,
 * and compare as the nine-digit sortable key the stored times have (see core/time `timestampSortKey`). A time that
 * is not a real one (30 February, hour 25, offset +99:00) or that falls outside years 0000-9999 is refused rather
 * than compared as something else: a Date would roll it over, or have no ISO form at all.
 */
function timeKey(name: string, v: string): string {
  const bad = (why: string): never => {
    throw new ParleyError('INVALID_FILTER', `${name} needs a time (RFC3339, or Unix seconds, milliseconds or nanoseconds) ${why}: ${quote(v)}`)
  }
  const t = /^\d+$/.test(v) ? unixInstant(BigInt(v)) : rfc3339Instant(v, bad)
  if (t.seconds < FIRST_SECOND || t.seconds > LAST_SECOND) bad('within years 0000-9999')
  return `${new Date(Number(t.seconds) * 1000).toISOString().slice(0, 19)}.${t.nanos}Z`
}

/** Whole seconds since 1970 and the nine digits of the fraction. */
interface Instant {
  seconds: bigint
  nanos: string
}

function unixInstant(n: bigint): Instant {
  const [seconds, nanos] = n > 10n ** 17n ? [n / 10n ** 9n, n % 10n ** 9n] : n > 10n ** 11n ? [n / 1000n, (n % 1000n) * 10n ** 6n] : [n, 0n]
  return { seconds, nanos: nanos.toString().padStart(9, '0') }
}

function rfc3339Instant(v: string, bad: (why: string) => never): Instant {
  const m = RFC3339.exec(v)
  if (!m) return bad('in one of those forms, a date-time with its zone (Z or an offset)')
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? 0)) as [number, number, number, number, number, number]
  const [offsetHours, offsetMinutes] = [Number(m[9] ?? 0), Number(m[10] ?? 0)]
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  date.setUTCHours(hour, minute, second, 0)
  // Date rolls 30 February into March and hour 24 into the next day: a time that does not read back is not one.
  const readsBack = date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day && date.getUTCHours() === hour && date.getUTCMinutes() === minute && date.getUTCSeconds() === second
  if (!readsBack || offsetHours > 23 || offsetMinutes > 59) bad('that exists')
  const offset = (m[8] === '-' ? -1 : 1) * (offsetHours * 3600 + offsetMinutes * 60)
  return { seconds: BigInt(date.getTime() / 1000 - offset), nanos: (m[7] ?? '').slice(0, 9).padEnd(9, '0') }
}

/** A caller's value as an error shows it: quoted, and cut when long. */
function quote(v: string): string {
  return JSON.stringify(v.length > 100 ? `${v.slice(0, 100)}…` : v)
}
