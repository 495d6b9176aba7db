import { METHODS } from 'node:http'
import fc from 'fast-check'
import { frame, framingArb, contentTypeArb, extraHeadersArb } from './headers.js'
import { broadcastBodyArb, dataBodyArb, datatypeBodyArb, jsonTextArb, utf8 } from './json.js'
import { multipartArb } from './multipart.js'
import { queryStringArb } from './query.js'
import { API_ROUTES, routePathArb, routesWith, strayPathArb, type Route } from './routes.js'
import type { Seeds } from './seeds.js'
import { jsonRequest, type FuzzRequest } from '../request.js'

/**
 * A generator family: one concern of the API surface, fuzzed as one property. `weight` is its share of a run's
 * requests (the families that send real messages are kept small, as each one costs the node a batch).
 */
export interface Family {
  name: string
  covers: string
  weight: number
  arb(seeds: Seeds): fc.Arbitrary<FuzzRequest>
}

/** Every method Node's parser knows (TRACE, CONNECT, WebDAV's...), and tokens it does not. */
const methodArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE') },
  { weight: 3, arbitrary: fc.constantFrom(...METHODS) },
  { weight: 1, arbitrary: fc.constantFrom('FOO', 'get', 'Post', 'G-ET', 'GET\u0000', 'BREW', 'A'.repeat(40), '', 'PRI') },
)

const routeFor = (method: string, pattern: RegExp): Route => {
  const r = routesWith(method).find((x) => pattern.test(x.pattern))
  if (!r) throw new Error(`no ${method} route matches ${pattern}`)
  return r
}

/** A route path for a POST, namespaced or not, with parameters filled. */
function postPath(seeds: Seeds, suffix: RegExp): fc.Arbitrary<string> {
  const namespaced = routeFor('POST', new RegExp(`^/api/v1/namespaces/:ns${suffix.source}`))
  const plain = routeFor('POST', new RegExp(`^/api/v1${suffix.source}`))
  // The fuzz namespace mostly, so that what is created lands beside the seeds rather than in `default`.
  return fc.oneof({ weight: 3, arbitrary: fc.constant(`/api/v1/namespaces/${seeds.namespace}${plain.pattern.slice('/api/v1'.length)}`) }, { weight: 1, arbitrary: routePathArb(namespaced, seeds) }, { weight: 1, arbitrary: fc.constant(plain.pattern) })
}

/** `?confirm=...` and friends on a POST, rarely: a confirmed send waits for the chain. */
const postQueryArb = fc.oneof({ weight: 6, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('?confirm=true', '?confirm=false', '?confirm=maybe', '?confirm', '?confirm=1&confirm=0', '?__proto__=1', '?constructor=x') })

const POST_PATHS = [/\/messages\/broadcast$/, /\/data$/, /\/datatypes$/, /\/broadcast\/datatype$/]

export const FAMILIES: Family[] = [
  {
    name: 'query',
    covers: 'GET and HEAD on every route with FireFly filters, paging, sort and flags; out-of-range times, huge numbers, prototype keys, repeats, broken escapes',
    weight: 30,
    arb: (seeds) =>
      fc
        .tuple(fc.constantFrom('GET', 'GET', 'GET', 'HEAD'), fc.constantFrom(...routesWith('GET')))
        .chain(([method, route]) => fc.tuple(fc.constant(method), routePathArb(route, seeds), queryStringArb(seeds)))
        .map(([method, path, query]): FuzzRequest => ({ family: 'query', method, target: path + query, headers: [], body: new Uint8Array(0) })),
  },
  {
    name: 'method-path',
    covers: "every method Node parses (and tokens it does not) on every route and on paths no route serves: traversal, encodings, absolute form, 8 KiB paths",
    weight: 15,
    arb: (seeds) =>
      fc
        .tuple(methodArb, fc.oneof(fc.constantFrom(...API_ROUTES).chain((r) => routePathArb(r, seeds)), strayPathArb(seeds)), fc.option(fc.constantFrom('?limit=1', '?tag=x', '?__proto__=x'), { nil: '' }), fc.boolean())
        .map(([method, path, query, withBody]): FuzzRequest =>
          withBody ? jsonRequest('method-path', method, path + query, '{"value":1}') : { family: 'method-path', method, target: path + query, headers: [], body: new Uint8Array(0) },
        ),
  },
  {
    name: 'headers',
    covers: 'bodies framed every way (chunked, Content-Length over/under/bogus/doubled, none) under every Content-Type, with encodings, Expect, Upgrade, latin-1 and 40 KB headers',
    weight: 15,
    arb: (seeds) =>
      fc
        .tuple(
          fc.constantFrom(...POST_PATHS).chain((p) => postPath(seeds, p)),
          fc.oneof(broadcastBodyArb(seeds).map((b) => utf8(JSON.stringify(b))), jsonTextArb),
          contentTypeArb,
          framingArb,
          extraHeadersArb,
        )
        .map(([path, body, type, framing, extra]): FuzzRequest => {
          const framed = frame(body, framing)
          return {
            family: 'headers',
            method: 'POST',
            target: path,
            headers: [...(type !== undefined ? ([['Content-Type', type]] as [string, string][]) : []), ...framed.headers, ...extra],
            body: framed.body,
            hangUp: framed.hangUp,
          }
        }),
  },
  {
    name: 'json-body',
    covers: 'every POST route with arbitrary JSON text: any value, truncation, duplicate keys, 60,000-deep nesting, numbers past doubles, lone surrogates, BOM, invalid UTF-8',
    weight: 15,
    arb: (seeds) =>
      fc
        .tuple(fc.constantFrom(...POST_PATHS).chain((p) => postPath(seeds, p)), jsonTextArb)
        .map(([path, body]) => jsonRequest('json-body', 'POST', path, body)),
  },
  {
    name: 'broadcast',
    covers: 'near-valid broadcast bodies: a valid send with up to three fields set to odd values or deleted (topics, tag, txtype, node-set header fields, data items, datatype refs, idempotency keys)',
    weight: 10,
    arb: (seeds) =>
      fc.tuple(postPath(seeds, /\/messages\/broadcast$/), postQueryArb, broadcastBodyArb(seeds)).map(([path, q, body]) => jsonRequest('broadcast', 'POST', path + q, JSON.stringify(body))),
  },
  {
    name: 'datatype',
    covers: 'near-valid datatype definitions on both routes: invalid, recursive, deep and costly schemas, backtracking and unsupported patterns, odd names and versions',
    weight: 5,
    arb: (seeds) =>
      fc
        .tuple(fc.constantFrom(/\/datatypes$/, /\/broadcast\/datatype$/).chain((p) => postPath(seeds, p)), postQueryArb, datatypeBodyArb())
        .map(([path, q, body]) => jsonRequest('datatype', 'POST', path + q, JSON.stringify(body))),
  },
  {
    name: 'data-value',
    covers: 'near-valid JSON data uploads: values, validators, datatype references, fields the node sets',
    weight: 5,
    arb: (seeds) => fc.tuple(postPath(seeds, /\/data$/), dataBodyArb(seeds)).map(([path, body]) => jsonRequest('data-value', 'POST', path, JSON.stringify(body))),
  },
  {
    name: 'multipart',
    covers: 'blob uploads: random boundaries, fields before/after/without the file, two files, no file, bad dispositions and filenames, missing or foreign closing boundary, LF line ends, too many parts, chunked',
    weight: 5,
    arb: (seeds) =>
      fc
        .tuple(postPath(seeds, /\/data$/), multipartArb(seeds), fc.oneof({ weight: 4, arbitrary: fc.constant({ kind: 'length' as const }) }, { weight: 1, arbitrary: framingArb }))
        .map(([path, mp, framing]): FuzzRequest => {
          const framed = frame(mp.body, framing)
          return { family: 'multipart', method: 'POST', target: path, headers: [['Content-Type', mp.contentType], ...framed.headers], body: framed.body, hangUp: framed.hangUp }
        }),
  },
]
