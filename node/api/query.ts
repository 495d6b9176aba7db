import type { ParsedUrlQuery } from 'node:querystring'
import { ParleyError } from '../core/errors.js'
import { parseBool } from '../core/input.js'

export const DEFAULT_LIMIT = 25
export const MAX_LIMIT = 1000

export interface Paging {
  limit: number
  skip: number
}

/** `limit` and `skip` of a collection query, as FireFly reads them: bad numbers are the caller's mistake. */
export function parsePaging(q: ParsedUrlQuery): Paging {
  return {
    limit: intParam(q, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT),
    skip: intParam(q, 'skip', 0, 0, Number.MAX_SAFE_INTEGER),
  }
}

export function intParam(q: ParsedUrlQuery, name: string, dflt: number, min: number, max: number): number {
  const raw = single(q, name)
  if (raw === undefined || raw === '') return dflt
  if (!/^\d+$/.test(raw)) throw new ParleyError('INVALID_FIELD', `${name} must be a whole number: ${JSON.stringify(raw)}`)
  const n = Number(raw)
  if (n < min || n > max) throw new ParleyError('INVALID_FIELD', `${name} must be between ${min} and ${max}: ${raw}`)
  return n
}

/** A boolean flag: present and bare, `true` or `1` are true; `false` or `0` false; absent, undefined. */
export function boolParam(q: ParsedUrlQuery, name: string): boolean | undefined {
  const raw = single(q, name)
  return raw === undefined ? undefined : parseBool(raw, name, { empty: true })
}

function single(q: ParsedUrlQuery, name: string): string | undefined {
  const v = q[name]
  if (Array.isArray(v)) {
    if (v.length > 1) throw new ParleyError('INVALID_FIELD', `${name} given more than once`)
    return v[0]
  }
  return v
}
