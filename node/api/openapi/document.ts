import { HTTP_STATUS } from '../errors.js'
import { DEFAULT_LIMIT, MAX_LIMIT } from '../query.js'
import type { DocumentedRoute } from '../router.js'
import { API_TAGS, type AnyRouteDoc, type ParamDoc, type RouteForm } from '../route-doc.js'
import { ParleyError, type ErrorCode } from '../../core/errors.js'
import { NAME_RE } from '../../core/names.js'
import { ref, SCHEMAS } from './schemas.js'

/** An OpenAPI 3.1 document, as JSON. */
export type OpenApiDocument = { readonly openapi: '3.1.0'; readonly [key: string]: unknown }

type Obj = Record<string, unknown>

/**
 * What any route can be refused with, whatever it does: a malformed query or request, a `Host` that is not the
 * member's (node/api/access.ts), a URL over the limit, our failure, and a wait to retry after (the database server
 * away, every API connection taken: node/api/errors.ts, connection-limit.ts).
 */
const EVERY_ROUTE: readonly ErrorCode[] = ['BAD_REQUEST', 'MISDIRECTED_REQUEST', 'URI_TOO_LONG', 'INTERNAL', 'UNAVAILABLE']

/** What FireFly's document says of its filter fields; the syntax is node/api/filters.ts's. */
const FILTER_DESCRIPTION =
  'Filter field. Prefixes supported: > >= < <= (also >> <<) @ (contains) ^ (starts with) $ (ends with), ! negates, : ignores case. A field given twice matches either value'

const NAMESPACE: Obj = {
  name: 'ns',
  in: 'path',
  required: true,
  description: 'The namespace which scopes this request',
  schema: { type: 'string', pattern: NAME_RE.source, examples: ['default'] },
}

const INFO_DESCRIPTION = [
  "The REST API of one Parley member: the messaging part of Hyperledger FireFly's API, with FireFly's paths and JSON shapes.",
  '',
  'Every namespaced route is served at `/api/v1/namespaces/{ns}/...` and, for the namespace `default`, at `/api/v1/...`; both are listed, as in FireFly\'s own document. Durable subscriptions are also served without `/api/v1`, at `/namespaces/{ns}/subscriptions`.',
  '',
  'Every GET route answers HEAD too, and every path answers OPTIONS (204, with `Allow`); a path served with other methods answers 405. Every refusal is a 4xx or 5xx with `{"error": "<CODE>: <what was wrong>"}`.',
  '',
  'Events are delivered over a WebSocket at `/ws` (see docs/api.md). Test controls under `/admin/v1` exist only on members started with `admin: true` (the local network\'s are), and ask for the member\'s admin token as `Authorization: Bearer <token>`.',
  '',
  'The API answers only its own host names (421 otherwise); a request carrying an `Origin` other than the member\'s own is refused (403) for anything but GET, HEAD and OPTIONS; JSON bodies are taken only as `application/json` (415).',
].join('\n')

/**
 * The OpenAPI 3.1 description of the routes a router serves, made from their registrations (router.ts
 * `documented()`): one operation per served path and method, so the document lists exactly what is served.
 */
export function openApiDocument(routes: readonly DocumentedRoute[], version: string): OpenApiDocument {
  const paths: Record<string, Record<string, Obj>> = {}
  const operationIds = new Set<string>()
  for (const route of routes) {
    const path = route.pattern.replace(/:([^/]+)/g, '{$1}')
    const method = route.method.toLowerCase()
    const operation = operationOf(route.doc, route.form, route.method)
    const id = operation.operationId as string
    // Both would be the router's mistake, found by the first request for the document (and by its unit test).
    if (operationIds.has(id)) throw new ParleyError('INTERNAL', `two routes share the operationId ${id} (${route.method} ${route.pattern})`)
    operationIds.add(id)
    const item = (paths[path] ??= {})
    if (item[method]) throw new ParleyError('INTERNAL', `${route.method} ${route.pattern} is registered twice`)
    item[method] = operation
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Parley member API', version, description: INFO_DESCRIPTION, license: { name: 'Apache-2.0', identifier: 'Apache-2.0' } },
    servers: [{ url: '/', description: 'This member' }],
    tags: API_TAGS.filter((t) => routes.some((r) => r.doc.tag === t)).map((name) => ({ name })),
    paths,
    components: { schemas: SCHEMAS },
  }
}

const OPERATION_SUFFIX: Readonly<Record<RouteForm, string>> = { namespaced: 'Namespace', default: '', unprefixed: 'Unprefixed', global: '' }

function operationOf(doc: AnyRouteDoc, form: RouteForm, method: DocumentedRoute['method']): Obj {
  const namespaced = form === 'namespaced' || form === 'unprefixed'
  const parameters: Obj[] = []
  if (namespaced) parameters.push(NAMESPACE)
  for (const [name, p] of Object.entries(doc.params ?? {})) parameters.push(param(name, 'path', { ...p, required: true }))
  for (const [name, p] of Object.entries(doc.query ?? {})) parameters.push(param(name, 'query', p))
  if (doc.paging) {
    parameters.push(param('limit', 'query', { description: 'The most items to answer', schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT } }))
    parameters.push(param('skip', 'query', { description: 'How many items to skip', schema: { type: 'integer', minimum: 0, default: 0 } }))
  }
  for (const field of Object.keys(doc.filters ?? {}).sort()) parameters.push(param(field, 'query', { description: FILTER_DESCRIPTION }))

  const description = [doc.description, form === 'default' ? 'In the namespace `default`.' : undefined, form === 'unprefixed' ? 'The same route as under `/api/v1`, at the path without it.' : undefined]
    .filter((d) => d !== undefined)
    .join(' ')
  return {
    operationId: doc.operationId + OPERATION_SUFFIX[form],
    summary: doc.summary,
    ...(description ? { description } : {}),
    tags: [doc.tag],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(doc.body ? { requestBody: requestBody(doc.body) } : {}),
    responses: { ...successes(doc), ...errorResponses([...doc.errors, ...(namespaced ? ['INVALID_FIELD' as const] : []), ...accessErrors(doc, method)]) },
  }
}

/**
 * What the API's access rules add to a route (node/api/access.ts, media-type.ts): anything but a read is refused to
 * pages of other origins, and a JSON body must come as JSON.
 */
function accessErrors(doc: AnyRouteDoc, method: DocumentedRoute['method']): ErrorCode[] {
  return [...(method === 'GET' ? [] : ['FORBIDDEN' as const]), ...(doc.body?.json !== undefined ? ['UNSUPPORTED_MEDIA_TYPE' as const] : [])]
}

function param(name: string, where: 'path' | 'query', p: ParamDoc): Obj {
  return { name, in: where, ...(p.required ? { required: true } : {}), description: p.description, schema: p.schema ?? { type: 'string' } }
}

function requestBody(body: NonNullable<AnyRouteDoc['body']>): Obj {
  const content: Obj = {}
  if (body.json !== undefined) content['application/json'] = { schema: body.json }
  if (body.multipart !== undefined) content['multipart/form-data'] = { schema: body.multipart }
  return { required: true, ...(body.description ? { description: body.description } : {}), content }
}

function successes(doc: AnyRouteDoc): Obj {
  const out: Obj = {}
  for (const [status, r] of Object.entries(doc.responses)) {
    if (!r) continue
    const headers = Object.entries(r.headers ?? {}).map(([name, h]) => [name, { description: h.description, schema: h.schema ?? { type: 'string' } }] as const)
    out[status] = {
      description: r.description,
      ...(headers.length > 0 ? { headers: Object.fromEntries(headers) } : {}),
      ...(r.schema !== undefined ? { content: { [r.type ?? 'application/json']: { schema: r.schema } } } : {}),
    }
  }
  return out
}

/** One answer per status the route's error codes map to (node/api/errors.ts), naming the codes; all share the error shape. */
function errorResponses(codes: readonly ErrorCode[]): Obj {
  const byStatus = new Map<number, Set<ErrorCode>>()
  for (const code of [...codes, ...EVERY_ROUTE]) {
    const status = HTTP_STATUS[code]
    const set = byStatus.get(status) ?? new Set()
    set.add(code)
    byStatus.set(status, set)
  }
  const out: Obj = {}
  for (const status of [...byStatus.keys()].sort((a, b) => a - b)) {
    const codes = [...byStatus.get(status)!]
    out[String(status)] = { description: codes.join(', '), content: { 'application/json': { schema: ref('Error'), example: { error: `${codes[0]!}: <what was wrong>` } } } }
  }
  return out
}
