import type { ParsedUrlQuery } from 'node:querystring'
import type { Filter, FilterCondition, FilterOp } from '../model/index.js'

/** Query parameters that are not filters. */
const RESERVED = new Set(['limit', 'skip', 'sort', 'count', 'descending', 'ascending', 'pending', 'fetchdata', 'data', 'confirm', 'fetchreferences', 'fetchreference', 'fetchstatus'])

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
  const groups: FilterCondition[][] = []
  for (const [field, rawValue] of Object.entries(q)) {
    if (RESERVED.has(field.toLowerCase()) || rawValue === undefined) continue
    const values = Array.isArray(rawValue) ? rawValue : [rawValue]
    groups.push(values.map((v) => parseCondition(field, v)))
  }
  return groups.length > 0 ? groups : undefined
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
