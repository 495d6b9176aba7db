import type { IncomingMessage } from 'node:http'
import type { Context } from 'koa'
import { isParleyError, ParleyError } from '../core/errors.js'
import { overLimit, type RequestLimits } from '../core/limits.js'
import { parseJsonRaw, type JsonNode } from '../core/json.js'
import { goJson, type GoJsonValue } from '../core/json.js'
import { bodyContext } from './body-budget.js'
import { closeAfterAnswer, discardRest } from './discard.js'
import { assertJsonBody } from './media-type.js'

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * Reads a JSON body as text and parses it keeping each value's raw text: data values are hashed as received
 * (compacted), never re-serialised.
 *
 * The body counts against the member's in-flight budget, and its address's share of it, byte by byte as it arrives
 * until its handler is done (a declared length is a promise, not a cost). Oversize bodies are refused before they are
 * read whole, a body that stops arriving is abandoned (its connection closed) after `bodyIdleMs`, and one that is
 * still arriving after `bodyDeadlineMs` gets 408, as does one that sent nothing for `bodyStalledMs` when another body
 * needs the budget it holds. A refused body's rest is read and dropped up to a bound
 * (node/api/discard.ts), so that the client reads its answer.
 */
export async function readJsonBody(ctx: Context): Promise<JsonNode> {
  assertJsonBody(ctx)
  const body = bodyContext(ctx)
  const { limits } = body
  const limit = limits.jsonBodyBytes
  const declaredHeader = ctx.get('content-length')
  const declared = declaredHeader === '' ? undefined : Number(declaredHeader)
  if (declared !== undefined && declared > limit) {
    discardRest(ctx, limits, 0)
    throw overLimit('jsonBodyBytes', limit, `the body is ${declared} bytes`)
  }

  const chunks: Buffer[] = []
  let size = 0
  let timers: BodyTimers | undefined
  try {
    await readChunks(
      ctx.req,
      (chunk) => {
        size += chunk.length
        if (size > limit) throw overLimit('jsonBodyBytes', limit, `the body is over ${limit} bytes`)
        const refused = body.take(chunk.length)
        if (refused) throw refused
        chunks.push(chunk)
      },
      (fail) => (timers = bodyTimers(ctx, limits, fail)),
    )
  } catch (err) {
    if (timers?.idleExpired) throw new ParleyError('BAD_REQUEST', `the request body stopped arriving for ${limits.bodyIdleMs} ms (limits.bodyIdleMs)`, { cause: err })
    // A client this slow is not worth reading further: the answer closes the connection.
    if (isParleyError(err, 'REQUEST_TIMEOUT')) {
      closeAfterAnswer(ctx)
      throw err
    }
    // The client went away mid-body: nobody reads the answer, but it is the caller's doing, not the node's failure.
    if (ctx.req.destroyed && !ctx.req.complete && !isParleyError(err)) throw new ParleyError('BAD_REQUEST', 'the client closed the connection before the body was complete', { cause: err })
    if (isParleyError(err)) discardRest(ctx, limits, size)
    throw err
  } finally {
    timers?.stop()
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

interface BodyTimers {
  /** Called for every chunk. */
  touch(): void
  stop(): void
  /** Whether the body was abandoned for idling (its request destroyed). */
  readonly idleExpired: boolean
}

/**
 * Reads a request's body chunk by chunk with plain 'data'/'end' listeners (an async iterator over the stream costs
 * several promises and its own listeners per chunk). `onChunk` may throw to refuse the body: the promise rejects with
 * what it threw and this reader stops (what becomes of the rest is the caller's choice). A request that errors or
 * closes before its end rejects with the stream's error, as the iterator did.
 *
 * `startTimers` is called only when the body is not whole yet at the end of the event-loop turn the read began in: a
 * body already received cannot stop arriving, and most arrive within the turn of their head (Node parses the head and
 * hands the request over before it reads the body's packet), so most requests need no timer. The times are thus
 * counted from that turn's end rather than from its middle. The timers may end the read with `fail`.
 */
function readChunks(req: IncomingMessage, onChunk: (chunk: Buffer) => void, startTimers: (fail: (err: unknown) => void) => BodyTimers): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (req.readableEnded) return resolve()
    if (req.destroyed) return reject(prematureClose())
    let timers: BodyTimers | undefined
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
      timers?.touch()
      try {
        onChunk(chunk)
      } catch (err) {
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
      if (!settled && !req.complete) timers = startTimers(settle)
    })
  })
}

/** What a stream's async iterator throws when its stream closes before its end. */
function prematureClose(): Error {
  return Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' })
}

/**
 * The two clocks of a body still arriving. Idle: no chunk for `bodyIdleMs` destroys the request (the read then fails
 * and `idleExpired` says why). Deadline: still arriving `bodyDeadlineMs` after the read began ends the read with 408,
 * however steadily it trickles, so that no client holds a body's share of the budget for longer.
 */
function bodyTimers(ctx: Context, limits: RequestLimits, fail: (err: unknown) => void): BodyTimers {
  // While it arrives, a body that stalls may be evicted by one that needs the budget (limits.bodyStalledMs).
  const reading = bodyContext(ctx).reading(fail)
  let idleExpired = false
  const idle = setTimeout(() => {
    idleExpired = true
    ctx.req.destroy(new Error('request body idle'))
  }, limits.bodyIdleMs)
  idle.unref()
  const deadline = setTimeout(() => {
    fail(new ParleyError('REQUEST_TIMEOUT', `the request body did not arrive whole within ${limits.bodyDeadlineMs} ms (limits.bodyDeadlineMs)`))
  }, limits.bodyDeadlineMs)
  deadline.unref()
  return {
    touch() {
      idle.refresh()
    },
    stop() {
      clearTimeout(idle)
      clearTimeout(deadline)
      reading.done()
    },
    get idleExpired() {
      return idleExpired
    },
  }
}
