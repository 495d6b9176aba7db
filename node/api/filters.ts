import type { ParsedUrlQuery } from 'node:querystring'
import { ParleyError } from '../core/errors.js'
import { timestampSortKey } from '../core/time.js'

/** How a filterable field maps to SQL; `time` fields compare as sortable keys, `number` as integers. */
export interface FieldSpec {
  column: string
  kind: 'text' | 'time' | 'number'
}

/** Query parameters that are not filters. */
const RESERVED = new Set(['limit', 'skip', 'sort', 'count', 'descending', 'ascending', 'pending', 'fetchdata', 'data', 'confirm', 'fetchreferences', 'fetchreference', 'fetchstatus'])

/**
 * FireFly's collection filter syntax (`field=[!][:]op value`; `@` contains, `^` starts with, `$` ends with,
 * `>`, `<`, `>=`, `<=`; `!` negates; `:` ignores case). Different fields AND together; a field given more than once
 * ORs its values. Unknown parameters are the caller's mistake, named in a 400.
 */
export function parseFilters(q: ParsedUrlQuery, fields: Record<string, FieldSpec>): { sql: string; params: (string | number)[] } | undefined {
  const clauses: string[] = []
  const params: (string | number)[] = []
  for (const [rawName, rawValue] of Object.entries(q)) {
    const name = rawName.toLowerCase()
    if (RESERVED.has(name) || rawValue === undefined) continue
    const spec = fields[name]
    if (!spec) throw new ParleyError('INVALID_FILTER', `unknown filter field ${JSON.stringify(rawName)}; filterable: ${Object.keys(fields).join(', ')}`)
    const values = Array.isArray(rawValue) ? rawValue : [rawValue]
    const ors = values.map((v) => clause(spec, rawName, v, params))
    clauses.push(ors.length === 1 ? ors[0]! : `(${ors.join(' OR ')})`)
  }
  return clauses.length ? { sql: clauses.join(' AND '), params } : undefined
}

function clause(spec: FieldSpec, name: string, input: string, params: (string | number)[]): string {
  let v = input
  let not = false
  let ci = false
  for (;;) {
    if (v.startsWith('!')) (not = true), (v = v.slice(1))
    else if (v.startsWith(':')) (ci = true), (v = v.slice(1))
    else break
  }
  let op = '='
  for (const candidate of ['>=', '<=', '>>', '<<', '>', '<', '@', '^', '$', '=']) {
    if (v.startsWith(candidate)) {
      op = candidate
      v = v.slice(candidate.length)
      break
    }
  }
  const col = ci ? `LOWER(${spec.column})` : spec.column
  const val = ci ? v.toLowerCase() : v
  const typed = (): string | number => {
    if (spec.kind === 'number') {
      if (!/^-?\d+$/.test(val)) throw new ParleyError('INVALID_FILTER', `${name} needs a whole number: ${JSON.stringify(input)}`)
      return Number(val)
    }
    if (spec.kind === 'time') return timeKey(name, val)
    return val
  }
  let sql: string
  const like = LIKE_PATTERNS[op]
  if (like) {
    params.push(like(val.replace(/[\\%_]/g, (c) => `\\${c}`)))
    sql = `${col} LIKE ? ESCAPE '\\'`
  } else {
    params.push(typed())
    sql = `${col} ${COMPARISONS[op] ?? '='} ?`
  }
  return not ? `NOT (${sql})` : sql
}

const LIKE_PATTERNS: Record<string, (escaped: string) => string> = {
  '@': (v) => `%${v}%`,
  '^': (v) => `${v}%`,
  $: (v) => `%${v}`,
}
const COMPARISONS: Record<string, string> = { '>': '>', '>>': '>', '<': '<', '<<': '<', '>=': '>=', '<=': '<=' }

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

/** Filterable message fields. `topics` compares with the comma-joined topic list, as FireFly does (`@` for one of several). */
export const MESSAGE_FIELDS: Record<string, FieldSpec> = {
  id: { column: 'id', kind: 'text' },
  cid: { column: 'cid', kind: 'text' },
  type: { column: 'type', kind: 'text' },
  txtype: { column: 'txtype', kind: 'text' },
  author: { column: 'author', kind: 'text' },
  key: { column: 'key', kind: 'text' },
  tag: { column: 'tag', kind: 'text' },
  group: { column: 'grp', kind: 'text' },
  topics: { column: `REPLACE(REPLACE(REPLACE(topics, '["', ''), '"]', ''), '","', ',')`, kind: 'text' },
  state: { column: 'state', kind: 'text' },
  batch: { column: 'batch_id', kind: 'text' },
  txid: { column: 'tx_id', kind: 'text' },
  hash: { column: 'hash', kind: 'text' },
  datahash: { column: 'datahash', kind: 'text' },
  idempotencykey: { column: 'idempotency_key', kind: 'text' },
  created: { column: 'created_key', kind: 'time' },
  confirmed: { column: 'confirmed_key', kind: 'time' },
  sequence: { column: 'seq', kind: 'number' },
}

/** Filterable event fields. */
export const EVENT_FIELDS: Record<string, FieldSpec> = {
  id: { column: 'id', kind: 'text' },
  type: { column: 'type', kind: 'text' },
  reference: { column: 'reference', kind: 'text' },
  correlator: { column: 'correlator', kind: 'text' },
  tx: { column: 'tx', kind: 'text' },
  topic: { column: 'topic', kind: 'text' },
  sequence: { column: 'seq', kind: 'number' },
  created: { column: 'created', kind: 'text' },
}

/**
 * Filterable datatype fields (FireFly's DatatypeQueryFactory). `created` is stored in Go's trimmed form, so it is
 * compared through the same nine-digit padding `timestampSortKey` gives the filter value.
 */
export const DATATYPE_FIELDS: Record<string, FieldSpec> = {
  id: { column: 'id', kind: 'text' },
  message: { column: 'message_id', kind: 'text' },
  validator: { column: 'validator', kind: 'text' },
  name: { column: 'name', kind: 'text' },
  version: { column: 'version', kind: 'text' },
  created: {
    column: `SUBSTR(created, 1, 19) || '.' || SUBSTR(CASE WHEN INSTR(created, '.') > 0 THEN SUBSTR(created, 21, LENGTH(created) - 21) ELSE '' END || '000000000', 1, 9) || 'Z'`,
    kind: 'time',
  },
}
