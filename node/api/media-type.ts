import type { Context } from 'koa'
import { ParleyError } from '../core/errors.js'
import { shorten } from './query.js'

/**
 * Whether a media type (without parameters, lower-cased) is JSON:
 * `application/json` or a `+json` type such as `application/merge-patch+json`.
 */
export function isJsonMediaType(type: string): boolean {
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))
}

/**
 * Refuses (415) a JSON route's body sent as anything but JSON. A page of any origin may POST `text/plain`,
 * urlencoded or multipart without asking the browser's leave (a CORS preflight); JSON it cannot send unasked, so
 * taking JSON only as JSON keeps such pages out even where the origin rule does not reach. A request without a body
 * is let through (the body reader names what is missing); a body without a Content-Type is refused like any other.
 * Only UTF-8 is taken: it is the one encoding of JSON text (RFC 8259).
 */
export function assertJsonBody(ctx: Context): void {
  // Media types and charset names are case-insensitive (RFC 9110).
  const type = ctx.request.type.toLowerCase()
  if (type === '') {
    if (!hasBody(ctx)) return
    throw new ParleyError('UNSUPPORTED_MEDIA_TYPE', 'the body has no Content-Type: send JSON as Content-Type: application/json')
  }
  if (!isJsonMediaType(type)) throw new ParleyError('UNSUPPORTED_MEDIA_TYPE', `expected a JSON body (Content-Type: application/json), got ${shorten(type)}`)
  const charset = ctx.request.charset.toLowerCase()
  if (charset !== '' && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ParleyError('UNSUPPORTED_MEDIA_TYPE', `JSON is taken in UTF-8 only, got charset ${shorten(charset)}`)
  }
}

/** Whether the request has a body at all: a length over zero, or chunks coming. */
function hasBody(ctx: Context): boolean {
  const length = ctx.get('content-length')
  return ctx.get('transfer-encoding') !== '' || (length !== '' && length !== '0')
}
