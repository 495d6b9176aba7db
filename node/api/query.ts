import type { ParsedUrlQuery } from 'node:querystring'
import { ParleyError } from '../core/errors.js'
import { parseBool } from '../core/input.js'

export const DEFAULT_LIMIT = 25
export const MAX_LIMIT = 1000

/**
 * A query string's parameters by name, a repeated name as an array of its values in order. The object has no
 * prototype, so `__proto__`, `constructor` or `toString` are parameters like any other and nothing inherited is
 * ever read as one. Percent-escapes must be valid and of UTF-8 (`+` is a space); raw bytes outside ASCII are read
 * as UTF-8 too, as FireFly (Go) reads them (`curl '...?tag=café'` sends them so). A malformed escape, bytes that
 * are not UTF-8 (escaped or raw) and a raw control character or space are refused, not decoded into something the
 * client did not send.
 */
export function parseQuery(raw: string): ParsedUrlQuery {
  const q: ParsedUrlQuery = Object.create(null) as ParsedUrlQuery
  if (raw === '') return q
  const querystring = rawUtf8(raw)
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

/** Raw bytes outside ASCII come from the HTTP layer as one Latin-1 character each; they must spell UTF-8. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

function rawUtf8(querystring: string): string {
  const control = /[\x00-\x20\x7f]/.exec(querystring)
  if (control) throw new ParleyError('BAD_REQUEST', `the query string holds a character that must be percent-encoded (code ${control[0].charCodeAt(0)})`)
  if (!/[^\x21-\x7e]/.test(querystring)) return querystring
  // Past U+00FF a character is no byte the request carried: the string was decoded already, so it is not a query string.
  const wide = /[^\x00-\xff]/.exec(querystring)
  if (wide) throw new ParleyError('BAD_REQUEST', `the query string holds a character that is not a byte (code ${wide[0].codePointAt(0)})`)
  try {
    return UTF8.decode(Buffer.from(querystring, 'latin1'))
  } catch {
    throw new ParleyError('BAD_REQUEST', 'the query string holds raw bytes that are not UTF-8; send text as UTF-8, raw or percent-encoded')
  }
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
