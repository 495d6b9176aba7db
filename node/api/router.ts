import Router from '@koa/router'
import type { Context } from 'koa'
import { ParleyError } from '../core/errors.js'
import { NAME_RE } from '../core/names.js'

export const DEFAULT_NAMESPACE = 'default'

export type Handler<S> = (ctx: Context, services: S, ns: string) => Promise<void> | void

/**
 * Routes of the v1 API. A namespaced route is served both at `/api/v1/namespaces/{ns}/<path>` and, for the
 * default namespace, at `/api/v1/<path>`, as FireFly does.
 */
export class ApiRouter<S> {
  readonly router = new Router()
  constructor(private readonly services: S) {}

  get(path: string, handler: Handler<S>): this {
    return this.add('get', path, handler)
  }
  post(path: string, handler: Handler<S>): this {
    return this.add('post', path, handler)
  }
  private add(method: 'get' | 'post', path: string, handler: Handler<S>): this {
    this.router[method](`/api/v1/namespaces/:ns${path}`, (ctx) => handler(ctx, this.services, parseNamespace(ctx.params.ns)))
    this.router[method](`/api/v1${path}`, (ctx) => handler(ctx, this.services, DEFAULT_NAMESPACE))
    return this
  }
}

export function parseNamespace(ns: string | undefined): string {
  if (ns === undefined || !NAME_RE.test(ns)) {
    throw new ParleyError('INVALID_FIELD', `namespace must be 1-64 letters, digits, '.', '_' or '-' and start and end alphanumeric: ${JSON.stringify(ns)}`)
  }
  return ns
}
