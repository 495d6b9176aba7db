import type { ParsedUrlQuery } from 'node:querystring'
import type { Context, Middleware } from 'koa'
import { ParleyError } from '../core/errors.js'
import { NAME_RE } from '../core/names.js'
import { parseQuery, shorten } from './query.js'
import { DEFAULT_NAMESPACE } from '../model/index.js'
import type { AnyRouteDoc, RouteDoc, RouteForm } from './route-doc.js'

export { DEFAULT_NAMESPACE }

declare module 'koa' {
  interface DefaultContext {
    /** The route's path parameters (`:id` in `/messages/:id`), percent-decoded; set by ApiRouter before its handler runs. */
    params: Readonly<Record<string, string>>
  }
}

/** A route's handler: the query string comes parsed into an object without a prototype (see parseQuery). */
export type Handler<S> = (ctx: Context, services: S, ns: string, query: ParsedUrlQuery) => Promise<void> | void

/** A route outside namespaces (the admin routes, the API description): no namespace, the query parsed all the same. */
export type GlobalHandler<S> = (ctx: Context, services: S, query: ParsedUrlQuery) => Promise<void> | void

/** How a route is also reached: Parley's API also serves the subscriptions without the `/api/v1` prefix (docs/api.md). */
export interface RouteOptions {
  /** Also serve `/namespaces/{ns}<path>`, without `/api/v1`, beside the two `/api/v1` forms. */
  unprefixed?: boolean
}

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE'

/** One segment of a route's path: a literal (kept lower-cased, since paths match case-insensitively) or a parameter. */
type Segment = { literal: string } | { param: string }

interface Route {
  /** As registered, e.g. `/api/v1/namespaces/:ns/messages/:id`. */
  readonly pattern: string
  /** As registered. */
  readonly method: Method
  /** What it answers: a GET route answers HEAD too, listed first as `Allow` has always said it. */
  readonly methods: readonly string[]
  readonly segments: readonly Segment[]
  readonly run: (ctx: Context) => Promise<void> | void
  readonly doc: AnyRouteDoc
  readonly form: RouteForm
}

/** A served path and method with the route's description: what the API description (openapi/document.ts) is made of. */
export interface DocumentedRoute {
  /** As registered, e.g. `/api/v1/namespaces/:ns/messages/:id`. */
  readonly pattern: string
  /** The method the route was registered with (a GET route answers HEAD as well). */
  readonly method: Method
  readonly form: RouteForm
  readonly doc: AnyRouteDoc
}

/**
 * Routes of the v1 API. A namespaced route is served both at `/api/v1/namespaces/{ns}/<path>` and, for the
 * default namespace, at `/api/v1/<path>`, as FireFly does.
 *
 * Matching is by path segments, in the order routes were registered (the first that takes the path and the method
 * runs), with the rules the API has always had under @koa/router: literals match case-insensitively, a parameter is
 * one non-empty segment (percent-decoded, kept raw if that fails), and one trailing slash is optional. Routes are
 * grouped by their number of segments, so a request compares a handful of strings, where @koa/router ran every
 * route's regular expression and composed a middleware chain on each request (~5 % of a sending member's CPU).
 */
export class ApiRouter<S> {
  private readonly routesByLength = new Map<number, Route[]>()
  private readonly all: Route[] = []

  constructor(private readonly services: S) {}

  // Each registration takes the route's description, checked against its path (route-doc.ts): the API description
  // is made from these, so a route cannot be served undocumented.
  get<P extends string>(path: P, doc: RouteDoc<P>, handler: Handler<S>, opts?: RouteOptions): this {
    return this.add('GET', path, doc, handler, opts)
  }
  post<P extends string>(path: P, doc: RouteDoc<P>, handler: Handler<S>, opts?: RouteOptions): this {
    return this.add('POST', path, doc, handler, opts)
  }
  put<P extends string>(path: P, doc: RouteDoc<P>, handler: Handler<S>, opts?: RouteOptions): this {
    return this.add('PUT', path, doc, handler, opts)
  }
  delete<P extends string>(path: P, doc: RouteDoc<P>, handler: Handler<S>, opts?: RouteOptions): this {
    return this.add('DELETE', path, doc, handler, opts)
  }
  /** A route at exactly `path`, outside `/api/v1/namespaces`: the admin routes (`/admin/v1`), the API description. */
  at<P extends string>(method: Lowercase<Method>, path: P, doc: RouteDoc<P>, handler: GlobalHandler<S>): this {
    this.register(method.toUpperCase() as Method, path, (ctx) => handler(ctx, this.services, parseQuery(ctx.querystring)), doc, 'global')
    return this
  }

  /** Every route registered, in order: its path pattern and the methods it answers. */
  list(): { pattern: string; methods: string[] }[] {
    return this.all.map((r) => ({ pattern: r.pattern, methods: [...r.methods] }))
  }

  /** Every route registered, in order, with its description. */
  documented(): DocumentedRoute[] {
    return this.all.map((r) => ({ pattern: r.pattern, method: r.method, form: r.form, doc: r.doc }))
  }

  /**
   * The middleware serving the routes. What no route takes is answered here: a path some route serves, asked with
   * another method, is a 405 with `Allow` naming what it takes (OPTIONS: 204 with that list); a path no route serves
   * is a 404, whatever the method.
   */
  routes(): Middleware {
    return (ctx) => {
      const path = ctx.path
      // Literals are compared lower-cased; parameters keep the request's case (one split when it is lower-case already).
      const lower = path.toLowerCase()
      const segments = splitPath(lower)
      const candidates = this.routesByLength.get(segments.length)
      const method = ctx.method
      let allowed: string[] | undefined
      if (candidates) {
        for (const route of candidates) {
          if (!fits(route.segments, segments)) continue
          if (route.methods.includes(method)) {
            ctx.params = paramsOf(route.segments, lower === path ? segments : splitPath(path))
            return route.run(ctx)
          }
          allowed ??= []
          for (const m of route.methods) if (!allowed.includes(m)) allowed.push(m)
        }
      }
      if (!allowed) throw new ParleyError('NOT_FOUND', `no route for ${method} ${shorten(path)}`)
      ctx.set('Allow', [...allowed, 'OPTIONS'].join(', '))
      if (method === 'OPTIONS') {
        ctx.status = 204
        return
      }
      throw new ParleyError('METHOD_NOT_ALLOWED', `${method} is not served at ${shorten(path)}; it takes ${allowed.join(', ')}`)
    }
  }

  private add(method: Method, path: string, doc: AnyRouteDoc, handler: Handler<S>, opts: RouteOptions = {}): this {
    const namespaced = (ctx: Context) => handler(ctx, this.services, parseNamespace(ctx.params.ns), parseQuery(ctx.querystring))
    this.register(method, `/api/v1/namespaces/:ns${path}`, namespaced, doc, 'namespaced')
    this.register(method, `/api/v1${path}`, (ctx) => handler(ctx, this.services, DEFAULT_NAMESPACE, parseQuery(ctx.querystring)), doc, 'default')
    if (opts.unprefixed) this.register(method, `/namespaces/:ns${path}`, namespaced, doc, 'unprefixed')
    return this
  }

  private register(method: Method, pattern: string, run: (ctx: Context) => Promise<void> | void, doc: AnyRouteDoc, form: RouteForm): void {
    const segments = pattern.split('/').map((s): Segment => (s.startsWith(':') ? { param: s.slice(1) } : { literal: s.toLowerCase() }))
    const route: Route = { pattern, method, methods: method === 'GET' ? ['HEAD', 'GET'] : [method], segments, run, doc, form }
    this.all.push(route)
    const group = this.routesByLength.get(segments.length)
    if (group) group.push(route)
    else this.routesByLength.set(segments.length, [route])
  }
}

/** A request path's segments (`/a/b` → `['', 'a', 'b']`), one trailing slash dropped. */
function splitPath(path: string): string[] {
  return (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path).split('/')
}

/** Whether lower-cased `segments` (as many as the route's) fit the route: its literals, and a non-empty segment per parameter. */
function fits(route: readonly Segment[], segments: readonly string[]): boolean {
  for (let i = 0; i < route.length; i++) {
    const want = route[i]!
    const got = segments[i]!
    if ('literal' in want ? got !== want.literal : got === '') return false
  }
  return true
}

/** The route's parameters from the request's own segments, percent-decoded. */
function paramsOf(route: readonly Segment[], segments: readonly string[]): Record<string, string> {
  const params = Object.create(null) as Record<string, string>
  for (let i = 0; i < route.length; i++) {
    const want = route[i]!
    if ('param' in want) params[want.param] = decodeSegment(segments[i]!)
  }
  return params
}

function decodeSegment(raw: string): string {
  if (!raw.includes('%')) return raw
  try {
    return decodeURIComponent(raw)
  } catch {
    return raw
  }
}

export function parseNamespace(ns: string | undefined): string {
  if (ns === undefined || !NAME_RE.test(ns)) {
    throw new ParleyError('INVALID_FIELD', `namespace must be 1-64 letters, digits, '.', '_' or '-' and start and end alphanumeric: ${JSON.stringify(ns)}`)
  }
  return ns
}
