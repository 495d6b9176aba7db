import fc from 'fast-check'
import { ApiRouter } from '../../../../node/api/router.js'
import { API_ROUTES as REGISTRARS } from '../../../../node/api/routes/index.js'
import type { NodeServices } from '../../../../node/services.js'
import type { Seeds } from './seeds.js'
import { junkText } from './text.js'

export interface Route {
  /** The router's pattern, e.g. `/api/v1/namespaces/:ns/messages/:id`. */
  pattern: string
  /** Upper case, HEAD included where GET is. */
  methods: readonly string[]
}

/**
 * Every route the API serves, read from the router itself after the very registrations node/api/server.ts makes, so
 * a route added there is fuzzed at once. The handlers are never called.
 */
export const API_ROUTES: readonly Route[] = (() => {
  const api = new ApiRouter({} as NodeServices)
  for (const register of REGISTRARS) register(api)
  return api.list()
})()

export const routesWith = (method: string): Route[] => API_ROUTES.filter((r) => r.methods.includes(method))

/** Path segments that are not what any route wants: traversal, encodings, NUL, prototype names, length. */
const hostileSegment = fc.oneof(
  fc.constantFrom('', '.', '..', '%2e%2e', '%2F', '%00', '%', '%zz', '%C3%28', '%E0%A4%A', '~', '*', ';', '%20', '__proto__', 'constructor', 'prototype', 'NaN', '-1', '0'),
  fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponentSafe),
  fc.integer({ min: 65, max: 9000 }).map((n) => 'a'.repeat(n)),
)

/** A namespace: usable names, the system namespace, and names the name rule refuses. */
function namespaceArb(seeds: Seeds): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('default', seeds.namespace) },
    { weight: 2, arbitrary: fc.stringMatching(/^[a-zA-Z0-9]([a-zA-Z0-9._-]{0,20}[a-zA-Z0-9])?$/) },
    { weight: 1, arbitrary: fc.constantFrom('ff_system', 'svc_system', 'a'.repeat(64), 'a'.repeat(65), '-a', 'a-', 'a%20b', '%C3%84%C3%96', 'DEFAULT') },
    { weight: 2, arbitrary: hostileSegment },
  )
}

/** An id: the ids this node holds (so deep branches run), fresh UUIDs, UUIDs in odd spellings, and junk. */
function idArb(seeds: Seeds): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...seeds.ids) },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: fc.uuid().map((u) => u.toUpperCase()) },
    { weight: 1, arbitrary: fc.uuid().map((u) => u.replace(/-/g, '')) },
    { weight: 1, arbitrary: fc.uuid().map((u) => `{${u}}`) },
    { weight: 2, arbitrary: hostileSegment },
  )
}

/** Org and node lookups: name, DID, UUID. */
function identityArb(seeds: Seeds): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(...seeds.identities),
    fc.constantFrom(...seeds.identities).map((n) => encodeURIComponent(`did:firefly:org/${n}`)),
    fc.constantFrom('did:firefly:', 'did:firefly:org/', 'did%3Afirefly%3Anode%2Fx', 'did:other:org/x'),
    idArb(seeds),
  )
}

function paramArb(name: string, seeds: Seeds): fc.Arbitrary<string> {
  switch (name) {
    case 'ns':
      return namespaceArb(seeds)
    case 'id':
      return idArb(seeds)
    case 'nameOrId':
      return identityArb(seeds)
    case 'name':
      return fc.oneof(fc.constantFrom(seeds.datatype.name), fc.stringMatching(/^[a-z][a-z0-9_-]{0,10}$/), hostileSegment)
    case 'version':
      return fc.oneof(fc.constantFrom(seeds.datatype.version, '1', '1.0.0', 'v2'), hostileSegment)
    default:
      return fc.oneof(hostileSegment, fc.uuid())
  }
}

/** A concrete path of a route, each `:param` filled from what that parameter takes. */
export function routePathArb(route: Route, seeds: Seeds): fc.Arbitrary<string> {
  const parts = route.pattern.split('/')
  return fc.tuple(...parts.map((p) => (p.startsWith(':') ? paramArb(p.slice(1), seeds) : fc.constant(p)))).map((filled) => filled.join('/'))
}

/**
 * Paths no route serves as such: extra or missing segments, traversal, doubled slashes, trailing slashes, absolute
 * form, odd case, an 8 KiB path, random segments under the API root.
 */
export function strayPathArb(seeds: Seeds): fc.Arbitrary<string> {
  const fromRoute = fc.constantFrom(...API_ROUTES).chain((r) => routePathArb(r, seeds))
  return fc.oneof(
    fc.tuple(fc.constantFrom('/api/v1', '/api/v1/namespaces/default', '/api', '/', '/api/v2', '/API/V1'), fc.array(hostileSegment, { maxLength: 4 })).map(([root, segs]) => [root, ...segs].join('/')),
    fc.tuple(fromRoute, fc.constantFrom('/', '//', '/..', '/x', '/../status', '%2F', '?', '#frag', '/./', ';x=1')).map(([p, tail]) => p + tail),
    fromRoute.map((p) => p.replace('/api/v1', '//api//v1')),
    fromRoute.map((p) => p.toUpperCase()),
    fromRoute.map((p) => `http://127.0.0.1${p}`),
    fc.constantFrom('*', '/status', '/api/v1/namespaces', '/api/v1/namespaces/', '/ws', '/api/v1/namespaces/default/ws', '/api/v1/subscriptions', '/favicon.ico'),
    fc.integer({ min: 4000, max: 12_000 }).map((n) => `/api/v1/${'x'.repeat(n)}`),
    junkText.map((t) => `/api/v1/${encodeURIComponentSafe(t)}`),
  )
}

/** encodeURIComponent, or a hand-escaped form for a lone surrogate, which encodeURIComponent throws on. */
export function encodeURIComponentSafe(s: string): string {
  try {
    return encodeURIComponent(s)
  } catch {
    return [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')
  }
}
