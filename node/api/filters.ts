import type { ParsedUrlQuery } from 'node:querystring'
import type { Filter, FilterCondition, FilterOp } from '../model/index.js'
import { ParleyError } from '../core/errors.js'
import { shorten } from './query.js'

/** Query parameters that are not filters. */
const RESERVED = new Set(['limit', 'skip', 'sort', 'count', 'descending', 'ascending', 'pending', 'fetchdata', 'data', 'confirm', 'fetchreferences', 'fetchreference', 'fetchstatus', 'fetchverifiers'])

/** Longest first, so `>=` is not read as `>` followed by a value starting with `=`. */
const OPERATORS: [string, FilterOp][] = [
  ['>=', 'gte'],
  ['<=', 'lte'],
  ['>>', 'gt'],
  ['<<', 'lt'],
  ['>', 'gt'],
  ['<', 'lt'],
  ['@', 'contains'],
  ['^', 'startswith'],
  ['$', 'endswith'],
  ['=', 'eq'],
]

/**
 * FireFly's collection filter syntax (`field=[!][:]op value`; `@` contains, `^` starts with, `$` ends with,
 * `>`, `<`, `>=`, `<=`; `!` negates; `:` ignores case). Different fields AND together; a field given more than once
 * ORs its values. Which fields exist, and what values they take, the data layer decides.
 */
export function parseFilter(q: ParsedUrlQuery): Filter | undefined {
  // Field names match case-insensitively, so `tag=a&TAG=b` is one field given twice: one OR group.
  const groups = new Map<string, FilterCondition[]>()
  for (const [field, rawValue] of Object.entries(q)) {
    const key = field.toLowerCase()
    if (RESERVED.has(key) || rawValue === undefined) continue
    const values = Array.isArray(rawValue) ? rawValue : [rawValue]
    const group = groups.get(key) ?? []
    group.push(...values.map((v) => parseCondition(field, v)))
    groups.set(key, group)
  }
  return groups.size > 0 ? [...groups.values()] : undefined
}

/**
 * For a collection that takes no filters: a filter given to it would be silently ignored and the whole collection
 * answered as if it matched, so it is refused, naming the field. `own` lists the parameters the route reads itself.
 */
export function refuseFilter(q: ParsedUrlQuery, collection: string, own: readonly string[] = []): void {
  const field = Object.keys(q).find((k) => !RESERVED.has(k.toLowerCase()) && !own.includes(k))
  if (field !== undefined) throw new ParleyError('INVALID_FILTER', `${collection} cannot be filtered (unknown filter field ${JSON.stringify(shorten(field))}); it takes ${[...own, 'limit', 'skip'].join(', ')}`)
}

function parseCondition(field: string, input: string): FilterCondition {
  let v = input
  let not = false
  let caseInsensitive = false
  for (;;) {
    if (v.startsWith('!')) (not = true), (v = v.slice(1))
    else if (v.startsWith(':')) (caseInsensitive = true), (v = v.slice(1))
    else break
  }
  let op: FilterOp = 'eq'
  for (const [prefix, name] of OPERATORS) {
    if (v.startsWith(prefix)) {
      op = name
      v = v.slice(prefix.length)
      break
    }
  }
  return { field, op, value: v, not, caseInsensitive }
}
