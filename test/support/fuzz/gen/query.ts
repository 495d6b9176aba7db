import fc from 'fast-check'
import { DATATYPE_FIELDS, EVENT_FIELDS, MESSAGE_FIELDS } from '../../../../node/db/query-fields.js'
import { edgeNumberText, junkText } from './text.js'
import { encodeURIComponentSafe } from './routes.js'
import type { Seeds } from './seeds.js'

/** Every filterable field of every collection, as the data layer lists them. */
const FILTER_FIELDS = [...new Set([...Object.keys(MESSAGE_FIELDS), ...Object.keys(EVENT_FIELDS), ...Object.keys(DATATYPE_FIELDS)])]
const TIME_FIELDS = ['created', 'confirmed']
/** Parameters the routes read that are not filters. */
const FLAGS = ['descending', 'ascending', 'count', 'fetchreferences', 'fetchreference', 'fetchdata', 'data', 'pending', 'confirm', 'fetchverifiers', 'fetchstatus']
/** Names that are properties of every plain object. */
const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'isPrototypeOf']

/** FireFly's operator prefixes, their combinations, and prefixes that are not operators. */
const opPrefix = fc.constantFrom('', '', '=', '!', ':', '!:', ':!', '>', '>=', '<', '<=', '>>', '<<', '@', '^', '$', ':=', '!@', '!^', '!$', ':@', '?', '!!', '::', '=>', '<>', '~')

/** Time values: every accepted form, and forms past what Date and the stored keys can hold. */
const timeText = fc.oneof(
  fc.date({ min: new Date(0), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.integer({ min: 0, max: 2 ** 31 }).map(String),
  fc.bigInt({ min: 0n, max: 10n ** 25n }).map(String),
  fc.constantFrom(
    '100000000000000000',
    '99999999999999999999999999',
    '+275760-09-13',
    '+275760-09-13T00:00:00.001Z',
    '-271821-04-20',
    '0000-01-01',
    '9999-12-31T23:59:59.999999999Z',
    '10000-01-01T00:00:00Z',
    '2024-02-30T00:00:00Z',
    '2024-01-02T03:04:05',
    '2024-01-02T03:04:05+99:99',
    '2024-01-02T25:00:00Z',
    '2024-01-02t03:04:05z',
    '2024-01-02T03:04:05.1234567890Z',
    '2024-13-01',
    'Tue, 02 Jan 2024 03:04:05 GMT',
    '1e10',
    '-1',
  ),
)

function valueText(seeds: Seeds): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: timeText },
    { weight: 2, arbitrary: edgeNumberText },
    { weight: 2, arbitrary: fc.constantFrom(...seeds.ids, 'broadcast', 'confirmed', 'pending', 'batch_pin', 'none', 'fuzz', 'seed', 'message_confirmed') },
    { weight: 3, arbitrary: junkText },
    { weight: 1, arbitrary: fc.integer({ min: 500, max: 4000 }).map((n) => 'v'.repeat(n)) },
  )
}

const paramName = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...FILTER_FIELDS) },
  { weight: 2, arbitrary: fc.constantFrom(...TIME_FIELDS) },
  { weight: 2, arbitrary: fc.constantFrom(...PROTO_KEYS) },
  { weight: 1, arbitrary: fc.constantFrom(...FILTER_FIELDS).map((f) => f.toUpperCase()) },
  { weight: 1, arbitrary: junkText },
)

/** One `key=value` pair, most often a filter; the paging and flag parameters with values in and out of range. */
function pairArb(seeds: Seeds): fc.Arbitrary<[string, string]> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.tuple(paramName, opPrefix, valueText(seeds)).map(([k, op, v]): [string, string] => [k, op + v]) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom('limit', 'skip'), fc.oneof(edgeNumberText, fc.constantFrom('', '1000', '1001', '25'), junkText)) },
    { weight: 1, arbitrary: fc.tuple(fc.constant('sort'), fc.oneof(fc.constantFrom(...FILTER_FIELDS).chain((f) => fc.constantFrom(f, `-${f}`, `+${f}`)), junkText)) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...FLAGS), fc.constantFrom('', 'true', 'false', '1', '0', 'TRUE', 'yes', 'off', '2', 'tru')) },
    { weight: 1, arbitrary: fc.tuple(fc.constant('batch'), fc.oneof(fc.uuid(), fc.constantFrom(...seeds.ids), junkText)) },
  )
}

/**
 * A query string (with its `?`, or none): pairs URL-encoded or written raw, keys repeated, a bare key, broken percent
 * escapes, invalid UTF-8 escapes, `+` for space, and now and then a string of thousands of pairs.
 */
export function queryStringArb(seeds: Seeds): fc.Arbitrary<string> {
  const encoded = fc.tuple(pairArb(seeds), fc.constantFrom('encoded', 'encoded', 'raw', 'bare')).map(([[k, v], how]) => {
    if (how === 'bare') return encodeURIComponentSafe(k)
    if (how === 'raw') return `${rawSafe(k)}=${rawSafe(v)}`
    return `${encodeURIComponentSafe(k)}=${encodeURIComponentSafe(v)}`
  })
  const oddBit = fc.constantFrom('%', '%zz', '%C3%28', '%FF%FE', '=', '==', '&', '+', 'a=%', '%00=1', 'tag=%E0%A4%A', '__proto__[x]=1', 'a[]=1', 'constructor.prototype=1')
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant('') },
    { weight: 8, arbitrary: fc.array(fc.oneof({ weight: 6, arbitrary: encoded }, { weight: 1, arbitrary: oddBit }), { minLength: 1, maxLength: 6 }).map((ps) => `?${ps.join('&')}`) },
    { weight: 1, arbitrary: fc.tuple(pairArb(seeds), fc.integer({ min: 2, max: 50 })).map(([[k, v], n]) => `?${Array.from({ length: n }, () => `${encodeURIComponentSafe(k)}=${encodeURIComponentSafe(v)}`).join('&')}`) },
    { weight: 1, arbitrary: fc.integer({ min: 200, max: 1500 }).map((n) => `?${Array.from({ length: n }, (_, i) => `tag=t${i}`).join('&')}`) },
  )
}

/** What may stand unescaped in a request target: a raw space or control byte would not be HTTP at all. */
function rawSafe(s: string): string {
  return s.replace(/[\s\u0000-\u001f\u007f#&]/g, (c) => encodeURIComponent(c)).replace(/[^\u0000-\u00ff]/g, (c) => encodeURIComponentSafe(c))
}
