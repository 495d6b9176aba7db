import type { Context } from 'koa'
import { ParleyError } from '../core/errors.js'
import { parseJsonRaw, type JsonNode } from '../core/json.js'
import { goJson, type GoJsonValue } from '../core/json.js'

export const MAX_JSON_BODY = 16 * 1024 * 1024

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * Reads a JSON body as text and parses it keeping each value's raw text: data values are hashed as received
 * (compacted), never re-serialised. Oversize bodies are refused before they are read whole.
 */
export async function readJsonBody(ctx: Context, limit = MAX_JSON_BODY): Promise<JsonNode> {
  const type = ctx.request.type
  if (type && type !== 'application/json' && type !== 'text/plain') {
    throw new ParleyError('UNSUPPORTED_MEDIA_TYPE', `expected a JSON body (application/json), got ${type}`)
  }
  const declared = Number(ctx.get('content-length') || 0)
  if (declared > limit) throw new ParleyError('PAYLOAD_TOO_LARGE', `the body is ${declared} bytes; at most ${limit}`)
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length
    if (size > limit) throw new ParleyError('PAYLOAD_TOO_LARGE', `the body is over ${limit} bytes`)
    chunks.push(chunk as Buffer)
  }
  let text: string
  try {
    // Fatal: invalid UTF-8 would otherwise become U+FFFD, and the node would hash and store bytes the caller never sent.
    text = UTF8.decode(Buffer.concat(chunks))
  } catch {
    throw new ParleyError('INVALID_JSON', 'the request body is not valid UTF-8')
  }
  if (text.trim() === '') throw new ParleyError('INVALID_JSON', 'the request body is empty; expected a JSON object')
  return parseJsonRaw(text)
}

/** Answers with JSON written the Go way, so that raw data values go back out exactly as they were hashed. */
export function sendJson(ctx: Context, status: number, value: GoJsonValue): void {
  ctx.status = status
  ctx.type = 'application/json'
  ctx.body = goJson(value)
}
