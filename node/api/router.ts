import Router, { RouterEvents, type RouterContext } from '@koa/router'
import type { ParsedUrlQuery } from 'node:querystring'
import type { Context } from 'koa'
import { ParleyError } from '../core/errors.js'
import { NAME_RE } from '../core/names.js'
import { parseQuery, shorten } from './query.js'

export const DEFAULT_NAMESPACE = 'default'

/** A route's handler: the query string comes parsed into an object without a prototype (see parseQuery). */
export type Handler<S> = (ctx: Context, services: S, ns: string, query: ParsedUrlQuery) => Promise<void> | void

/** How a route is also reached: the spec writes some routes without the `/api/v1` prefix (4.8, subscriptions). */
export interface RouteOptions {
  /** Also serve `/namespaces/{ns}<path>`, the spec's form, beside the two `/api/v1` forms. */
  unprefixed?: boolean
}

/**
 * Routes of the v1 API. A namespaced route is served both at `/api/v1/namespaces/{ns}/<path>` and, for the
 * default namespace, at `/api/v1/<path>`, as FireFly does.
 */
export class ApiRouter<S> {
  readonly router = new Router()
  constructor(private readonly services: S) {
    this.router.on(RouterEvents.NotFound, refuseUnrouted)
  }

  get(path: string, handler: Handler<S>, opts?: RouteOptions): this {
    return this.add('get', path, handler, opts)
  }
  post(path: string, handler: Handler<S>, opts?: RouteOptions): this {
    return this.add('post', path, handler, opts)
  }
  put(path: string, handler: Handler<S>, opts?: RouteOptions): this {
    return this.add('put', path, handler, opts)
  }
  delete(path: string, handler: Handler<S>, opts?: RouteOptions): this {
    return this.add('delete', path, handler, opts)
  }
  /** A route at exactly `path`, outside `/api/v1` and namespaces: the admin routes, under `/admin/v1`. */
  at(method: 'get' | 'post', path: string, handler: (ctx: Context, services: S) => Promise<void> | void): this {
    this.router[method](path, (ctx) => handler(ctx, this.services))
    return this
  }
  private add(method: 'get' | 'post' | 'put' | 'delete', path: string, handler: Handler<S>, opts: RouteOptions = {}): this {
    const namespaced = (ctx: RouterContext) => handler(ctx, this.services, parseNamespace(ctx.params.ns), parseQuery(ctx.querystring))
    this.router[method](`/api/v1/namespaces/:ns${path}`, namespaced)
    this.router[method](`/api/v1${path}`, (ctx) => handler(ctx, this.services, DEFAULT_NAMESPACE, parseQuery(ctx.querystring)))
    if (opts.unprefixed) this.router[method](`/namespaces/:ns${path}`, namespaced)
    return this
  }
}

/**
 * What no route takes, answered here rather than by @koa/router's allowedMethods, which throws its 405 without the
 * `Allow` header and answers a method it does not know (TRACE, PROPFIND...) with 501 whatever the path. A path some
 * route serves, asked with another method: 405 with `Allow` naming what it takes (OPTIONS: 204 with that list). A
 * path no route serves: 404, whatever the method.
 */
function refuseUnrouted(ctx: RouterContext): void {
  const allowed = [...new Set((ctx.matched ?? []).flatMap((layer) => layer.methods))]
  if (allowed.length === 0) throw new ParleyError('NOT_FOUND', `no route for ${ctx.method} ${shorten(ctx.path)}`)
  ctx.set('Allow', [...allowed, 'OPTIONS'].join(', '))
  if (ctx.method === 'OPTIONS') {
    ctx.status = 204
    return
  }
  throw new ParleyError('METHOD_NOT_ALLOWED', `${ctx.method} is not served at ${shorten(ctx.path)}; it takes ${allowed.join(', ')}`)
}

export function parseNamespace(ns: string | undefined): string {
  if (ns === undefined || !NAME_RE.test(ns)) {
    throw new ParleyError('INVALID_FIELD', `namespace must be 1-64 letters, digits, '.', '_' or '-' and start and end alphanumeric: ${JSON.stringify(ns)}`)
  }
  return ns
}
