import type { Context, Next } from 'koa'
import { ParleyError, errorMessage, isParleyError, isTemporarilyUnavailable, type ErrorCode } from '../core/errors.js'

/** Each error code as an HTTP client sees it: 4xx for the caller's mistakes, 5xx for ours or for waiting. */
export const HTTP_STATUS: Readonly<Record<ErrorCode, number>> = {
  BAD_REQUEST: 400,
  INVALID_ID: 400,
  INVALID_JSON: 400,
  INVALID_FIELD: 400,
  INVALID_FILTER: 400,
  SCHEMA_VALIDATION_FAILED: 400,
  UNKNOWN_DATATYPE: 400,
  UNKNOWN_IDENTITY: 400,
  PAYLOAD_TOO_LARGE: 413,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  MISDIRECTED_REQUEST: 421,
  URI_TOO_LONG: 414,
  EXPECTATION_FAILED: 417,
  UNSUPPORTED_MEDIA_TYPE: 415,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  MESSAGE_REJECTED: 409,
  CONFIRM_TIMEOUT: 408,
  BAD_PEER_DATA: 400,
  UNAVAILABLE: 503,
  STORAGE_FULL: 507,
  TOO_MANY_REQUESTS: 429,
  REQUEST_TIMEOUT: 408,
  INTERNAL: 500,
}

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
      const status = HTTP_STATUS[e.code]
      // A full store is logged once by whoever found it, not once per refused request.
      if (status >= 500 && e.code !== 'STORAGE_FULL') log(`api: ${ctx.method} ${ctx.path} failed: ${errorMessage(err)}`)
      ctx.status = status
      ctx.type = 'application/json'
      // As text: see sendJsonText.
      ctx.body = JSON.stringify(e.toJSON())
    }
  }
}

function toParleyError(err: unknown): ParleyError {
  if (isParleyError(err)) return err
  // The database server is gone for now (its message names it); the member reconnects by itself, so try again later.
  if (isTemporarilyUnavailable(err)) return new ParleyError('UNAVAILABLE', err.message, { cause: err })
  // Errors raised by Koa and its body parser carry an HTTP status and are the caller's doing when 4xx.
  const status = (err as { status?: unknown; statusCode?: unknown }).status ?? (err as { statusCode?: unknown }).statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) {
    if (status === 413) return new ParleyError('PAYLOAD_TOO_LARGE', errorMessage(err), { cause: err })
    if (status === 415) return new ParleyError('UNSUPPORTED_MEDIA_TYPE', errorMessage(err), { cause: err })
    if (status === 404) return new ParleyError('NOT_FOUND', errorMessage(err), { cause: err })
    if (status === 405) return new ParleyError('METHOD_NOT_ALLOWED', errorMessage(err), { cause: err })
    return new ParleyError(/json/i.test(errorMessage(err)) ? 'INVALID_JSON' : 'BAD_REQUEST', errorMessage(err), { cause: err })
  }
  return new ParleyError('INTERNAL', errorMessage(err), { cause: err })
}
