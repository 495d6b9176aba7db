import type { ParsedUrlQuery } from 'node:querystring'
import type { Filter, FilterCondition, FilterOp } from '../model/index.js'

/** Query parameters that are not filters. */
const RESERVED = new Set(['limit', 'skip', 'sort', 'count', 'descending', 'ascending', 'pending', 'fetchdata', 'data', 'confirm', 'fetchreferences', 'fetchreference', 'fetchdigests', 'fetchstatus', 'fetchverifiers'])

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
 * ORs its values. Which fields exist, and what values they take, the data layer decides. `own` names the parameters
 * a route reads itself (as spelled), which are not filters.
 */
export function parseFilter(q: ParsedUrlQuery, own: readonly string[] = []): Filter | undefined {
  // Field names match case-insensitively, so `tag=a&TAG=b` is one field given twice: one OR group.
  const groups = new Map<string, FilterCondition[]>()
  for (const [field, rawValue] of Object.entries(q)) {
    const key = field.toLowerCase()
    if (RESERVED.has(key) || own.includes(field) || rawValue === undefined) continue
    const values = Array.isArray(rawValue) ? rawValue : [rawValue]
    const group = groups.get(key) ?? []
    group.push(...values.map((v) => parseCondition(field, v)))
    groups.set(key, group)
  }
  return groups.size > 0 ? [...groups.values()] : undefined
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

/** `filter` narrowed to `field` equal to `value`: how a route under an object (`transactions/{id}/...`) picks its items. */
export function andEquals(filter: Filter | undefined, field: string, value: string): Filter {
  return [...(filter ?? []), [{ field, op: 'eq', value, not: false, caseInsensitive: false }]]
}
