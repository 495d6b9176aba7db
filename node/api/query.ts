import type { ParsedUrlQuery } from 'node:querystring'
import { ParleyError } from '../core/errors.js'
import { parseBool } from '../core/input.js'

export const DEFAULT_LIMIT = 25
export const MAX_LIMIT = 1000

/**
 * A query string's parameters by name, a repeated name as an array of its values in order. The object has no
 * prototype, so `__proto__`, `constructor` or `toString` are parameters like any other and nothing inherited is
 * ever read as one. The string must be ASCII with valid percent-escapes of UTF-8 (`+` is a space): a malformed
 * escape, an escape of invalid UTF-8 or a raw non-ASCII byte is refused, not decoded into something the client
 * did not send.
 */
export function parseQuery(querystring: string): ParsedUrlQuery {
  const q: ParsedUrlQuery = Object.create(null) as ParsedUrlQuery
  if (querystring === '') return q
  // A raw byte outside printable ASCII reaches here as a Latin-1 character: no client that encodes sends one.
  const raw = /[^\x21-\x7e]/.exec(querystring)
  if (raw) throw new ParleyError('BAD_REQUEST', `the query string holds a character that must be percent-encoded (code ${raw[0].charCodeAt(0)}); send it as UTF-8 escapes`)
  for (const pair of querystring.split('&')) {
    if (pair === '') continue
    const eq = pair.indexOf('=')
    const key = decode(eq < 0 ? pair : pair.slice(0, eq))
    const value = eq < 0 ? '' : decode(pair.slice(eq + 1), key)
    const had = q[key]
    if (had === undefined) q[key] = value
    else if (Array.isArray(had)) had.push(value)
    else q[key] = [had, value]
  }
  return q
}

function decode(text: string, key?: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '))
  } catch {
    const where = key === undefined ? `the query parameter name ${JSON.stringify(shorten(text))}` : `the value of query parameter ${JSON.stringify(shorten(key))}`
    throw new ParleyError('BAD_REQUEST', `${where} is not valid percent-encoded UTF-8: ${JSON.stringify(shorten(text))}`)
  }
}

/** Echoes of what a client sent are cut: an 8 KiB parameter need not come back whole in the error. */
export function shorten(text: string, max = 100): string {
  return text.length > max ? `${text.slice(0, max)}…` : text
}

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

/** A parameter given at most once: a repeated one is refused rather than one of its values picked. */
export function single(q: ParsedUrlQuery, name: string): string | undefined {
  const v = q[name]
  if (Array.isArray(v)) {
    if (v.length > 1) throw new ParleyError('INVALID_FIELD', `${name} given more than once`)
    return v[0]
  }
  return v
}
