import type { IncomingMessage } from 'node:http'
import type { Context } from 'koa'
import { isParleyError, ParleyError } from '../core/errors.js'
import { overLimit } from '../core/limits.js'
import { parseJsonRaw, type JsonNode } from '../core/json.js'
import { goJson, type GoJsonValue } from '../core/json.js'
import { bodyContext } from './body-budget.js'
import { assertJsonBody } from './media-type.js'

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * Reads a JSON body as text and parses it keeping each value's raw text: data values are hashed as received
 * (compacted), never re-serialised.
 *
 * The body counts against the member's in-flight budget from its first byte until its handler is done: a declared
 * length is taken whole before anything is read, a chunked body chunk by chunk. Oversize bodies are refused before
 * they are read whole, and a body that stops arriving is abandoned (its connection closed) after `bodyIdleMs`.
 */
export async function readJsonBody(ctx: Context): Promise<JsonNode> {
  assertJsonBody(ctx)
  const body = bodyContext(ctx)
  const { limits, budget } = body
  const limit = limits.jsonBodyBytes
  const declaredHeader = ctx.get('content-length')
  const declared = declaredHeader === '' ? undefined : Number(declaredHeader)
  if (declared !== undefined && declared > limit) throw refuse(ctx, overLimit('jsonBodyBytes', limit, `the body is ${declared} bytes`))

  let taken = 0
  const take = (bytes: number): void => {
    if (!body.take(bytes)) {
      throw refuse(
        ctx,
        new ParleyError('TOO_MANY_REQUESTS', `this member is already reading ${budget.held} bytes of request bodies; at most ${budget.limitBytes} at once (limits.inFlightBodyBytes): try again shortly`),
      )
    }
    taken += bytes
  }
  if (declared !== undefined) take(declared)

  const chunks: Buffer[] = []
  let size = 0
  let idle: IdleWatch | undefined
  try {
    await readChunks(ctx.req, (chunk) => {
      size += chunk.length
      if (size > limit) throw refuse(ctx, overLimit('jsonBodyBytes', limit, `the body is over ${limit} bytes`))
      if (size > taken) take(size - taken)
      chunks.push(chunk)
    }, () => (idle = idleWatch(ctx, limits.bodyIdleMs)))
  } catch (err) {
    if (idle?.expired) throw new ParleyError('BAD_REQUEST', `the request body stopped arriving for ${limits.bodyIdleMs} ms (limits.bodyIdleMs)`, { cause: err })
    // The client went away mid-body: nobody reads the answer, but it is the caller's doing, not the node's failure.
    if (ctx.req.destroyed && !ctx.req.complete && !isParleyError(err)) throw new ParleyError('BAD_REQUEST', 'the client closed the connection before the body was complete', { cause: err })
    throw err
  } finally {
    idle?.stop()
  }
  let text: string
  try {
    // Fatal: invalid UTF-8 would otherwise become U+FFFD, and the node would hash and store bytes the caller never sent.
    text = UTF8.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks))
  } catch {
    throw new ParleyError('INVALID_JSON', 'the request body is not valid UTF-8')
  }
  if (text.trim() === '') throw new ParleyError('INVALID_JSON', 'the request body is empty; expected a JSON object')
  return parseJsonRaw(text)
}

/** Answers with JSON written the Go way, so that raw data values go back out exactly as they were hashed. */
export function sendJson(ctx: Context, status: number, value: GoJsonValue): void {
  ctx.status = status
  // What `ctx.type = 'application/json'` sets, without its MIME-table lookups on every answer.
  ctx.set('Content-Type', JSON_CONTENT_TYPE)
  ctx.body = goJson(value)
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/**
 * Answers `value` written by JSON.stringify, as Koa writes an object body, but handed to Koa as text: Koa tells an
 * object body from a web stream, a Blob and a fetch Response with `instanceof`, and naming the global `Response`
 * loads Node's fetch (undici), which took a member ~0.15 s of CPU at its first such answer.
 */
export function sendJsonText(ctx: Context, value: unknown): void {
  ctx.set('Content-Type', JSON_CONTENT_TYPE)
  ctx.body = JSON.stringify(value)
}

/** A refusal before the body was read to its end: the rest is not read, so the connection cannot be reused. */
function refuse(ctx: Context, err: ParleyError): ParleyError {
  if (!ctx.req.complete) ctx.set('Connection', 'close')
  return err
}

interface IdleWatch {
  /** Called for every chunk. */
  touch(): void
  stop(): void
  readonly expired: boolean
}

/**
 * Reads a request's body chunk by chunk with plain 'data'/'end' listeners (an async iterator over the stream costs
 * several promises and its own listeners per chunk). `onChunk` may throw to refuse the body: the promise rejects with
 * what it threw and nothing more is read. A request that errors or closes before its end rejects with the stream's
 * error, as the iterator did.
 *
 * `startIdle` is called only when the body is not whole yet at the end of the event-loop turn the read began in: a
 * body already received cannot stop arriving, and most arrive within the turn of their head (Node parses the head and
 * hands the request over before it reads the body's packet), so most requests need no timer. The idle time is thus
 * counted from that turn's end rather than from its middle.
 */
function readChunks(req: IncomingMessage, onChunk: (chunk: Buffer) => void, startIdle: () => IdleWatch): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (req.readableEnded) return resolve()
    if (req.destroyed) return reject(prematureClose())
    let idle: IdleWatch | undefined
    let settled = false
    const settle = (err?: unknown): void => {
      if (settled) return
      settled = true
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      req.off('close', onClose)
      if (err === undefined) resolve()
      else reject(err)
    }
    const onData = (chunk: Buffer): void => {
      idle?.touch()
      try {
        onChunk(chunk)
      } catch (err) {
        // The rest is not read: the stream flows on without a listener (what arrives is dropped) until the answer,
        // sent with `Connection: close`, ends the connection.
        settle(err)
      }
    }
    const onEnd = (): void => settle()
    const onError = (err: Error): void => settle(err)
    const onClose = (): void => settle(prematureClose())
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
    req.on('close', onClose)
    setImmediate(() => {
      if (!settled && !req.complete) idle = startIdle()
    })
  })
}

/** What a stream's async iterator throws when its stream closes before its end. */
function prematureClose(): Error {
  return Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' })
}

/** Destroys the request when no chunk has come for `ms`; the read loop then fails and `expired` says why. */
function idleWatch(ctx: Context, ms: number): IdleWatch {
  let expired = false
  const timer = setTimeout(() => {
    expired = true
    ctx.req.destroy(new Error('request body idle'))
  }, ms)
  timer.unref()
  return {
    touch() {
      timer.refresh()
    },
    stop() {
      clearTimeout(timer)
    },
    get expired() {
      return expired
    },
  }
}
