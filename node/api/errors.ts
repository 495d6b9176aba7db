import type { Context, Next } from 'koa'
import { ParleyError, errorMessage } from '../core/errors.js'

/**
 * Maps whatever a handler throws to a status and `{"error": "..."}`. A caller's mistake is a 4xx naming what was
 * wrong; anything unexpected is a 500 with a one-line message, never a stack trace, and is logged.
 */
export function errorMiddleware(log: (line: string) => void) {
  return async (ctx: Context, next: Next): Promise<void> => {
    try {
      await next()
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ParleyError('NOT_FOUND', `no route for ${ctx.method} ${ctx.path}`)
      }
    } catch (err) {
      const e = toParleyError(err)
      if (e.status >= 500) log(`api: ${ctx.method} ${ctx.path} failed: ${errorMessage(err)}`)
      ctx.status = e.status
      ctx.type = 'application/json'
      ctx.body = e.toJSON()
    }
  }
}

function toParleyError(err: unknown): ParleyError {
  if (err instanceof ParleyError) return err
  // Errors raised by Koa and its body parser carry an HTTP status and are the caller's doing when 4xx.
  const status = (err as { status?: unknown; statusCode?: unknown }).status ?? (err as { statusCode?: unknown }).statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) {
    if (status === 413) return new ParleyError('PAYLOAD_TOO_LARGE', errorMessage(err))
    if (status === 415) return new ParleyError('UNSUPPORTED_MEDIA_TYPE', errorMessage(err))
    if (status === 404) return new ParleyError('NOT_FOUND', errorMessage(err))
    if (status === 405) return new ParleyError('METHOD_NOT_ALLOWED', errorMessage(err))
    return new ParleyError(/json/i.test(errorMessage(err)) ? 'INVALID_JSON' : 'BAD_REQUEST', errorMessage(err))
  }
  return new ParleyError('INTERNAL', errorMessage(err))
}
