import type { Context } from 'koa'
import type { RequestLimits } from '../core/limits.js'

/**
 * What becomes of the rest of a request body once the request is refused before its body was read through (over a
 * limit, over the budget, not the right type).
 *
 * Most clients send their whole body before they read anything: closing the connection at once makes their next
 * write fail (EPIPE) and the kernel drop the answer unread (a reset), so they never learn why. The rest is therefore
 * read and dropped, as Node's own server does with a body nobody read, and the connection stays usable once it is
 * through; but only up to `limits.discardBodyBytes` and within `limits.bodyDeadlineMs`, past either of which the
 * connection is closed. A rest declared longer than that from the start is not read at all: the answer says
 * `Connection: close` and the connection ends once it is sent. `received` is how much of the body was read already.
 */
export function discardRest(ctx: Context, limits: RequestLimits, received: number): void {
  const req = ctx.req
  if (req.complete || req.readableEnded || req.destroyed) return
  if (ctx.headerSent) {
    // Too late to say `Connection: close`: the connection ends once the answer has gone.
    ctx.res.once('finish', () => req.socket.destroy())
    req.resume()
    return
  }
  const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length'])
  const rest = declared === undefined || !Number.isFinite(declared) ? undefined : declared - received
  if (rest !== undefined && rest > limits.discardBodyBytes) {
    closeAfterAnswer(ctx)
    return
  }
  let dropped = 0
  const cut = (): void => {
    stop()
    req.socket.destroy()
  }
  const onData = (chunk: Buffer): void => {
    dropped += chunk.length
    if (dropped > limits.discardBodyBytes) cut()
  }
  const timer = setTimeout(cut, limits.bodyDeadlineMs)
  timer.unref()
  const stop = (): void => {
    clearTimeout(timer)
    req.off('data', onData)
    req.off('end', stop)
    req.off('close', stop)
  }
  req.on('data', onData)
  req.once('end', stop)
  req.once('close', stop)
  req.resume()
}

/** The answer ends the connection; what arrives of the body until then is dropped unread. */
export function closeAfterAnswer(ctx: Context): void {
  if (!ctx.req.complete) ctx.set('Connection', 'close')
  ctx.req.resume()
}
