/**
 * One outgoing request to a peer's p2p endpoint: mutual TLS with the peer's registered certificate pinned (the
 * server must present exactly it), this node's certificate as the client's, time limits on every phase. It reports
 * what happened as an outcome for the retry loop; it throws only when the caller's own content fails.
 */
import https from 'node:https'
import type { PeerCertificate } from 'node:tls'
import { pipeline } from 'node:stream/promises'
import { errorMessage } from '../core/errors.js'

/** A peer to connect to, checked: an https URL and the fingerprint of its registered certificate. */
export interface Target {
  /** For messages: the node and its endpoint. */
  label: string
  base: URL
  cert: string
  fingerprint: string
}

export interface Credentials {
  cert: string
  key: string
}

/**
 * How an attempt ended: accepted (`ok`), refused for good (`final`: sending the same bytes again gets the same
 * answer), or worth trying again (`retry`; `now` when a kept-alive connection turned out closed, which says nothing
 * about the peer).
 */
export type Outcome = { kind: 'ok' } | { kind: 'final'; problem: string } | { kind: 'retry'; problem: string; now?: boolean }

/** The caller's content failed while it was being sent; `error` is what it threw, unchanged. */
export class ContentFailure extends Error {
  constructor(readonly error: unknown) {
    super(`the content failed: ${errorMessage(error)}`)
  }
}

export interface AttemptOptions {
  target: Target
  own: Credentials
  agent: https.Agent
  method: string
  path: string
  headers: Record<string, string>
  /** The body: bytes, or a stream of at most `size` bytes (sent chunked, after the peer said `100 Continue`). */
  body: { bytes: Buffer; expectContinue: boolean } | { stream: AsyncIterable<Uint8Array>; size: number }
  /** No bytes either way for this long (connecting, sending, waiting for the answer): the attempt is abandoned. */
  idleMs: number
  /** The whole attempt's ceiling, if any. */
  deadlineMs?: number
}

/** The most of an error answer that is read (its JSON `error` text goes into the outcome). */
const MAX_ANSWER_BYTES = 16 * 1024

export function attempt(o: AttemptOptions): Promise<Outcome> {
  return new Promise<Outcome>((resolve, reject) => {
    let settled = false
    let answered = false
    let bodySent = false
    let overflow: string | undefined
    let pumping: Promise<void> | undefined
    const settle = (outcome: Outcome | ContentFailure): void => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      const report = (): void => (outcome instanceof ContentFailure ? reject(outcome) : resolve(outcome))
      if (!pumping) return report()
      // A stream body still being read winds down first (the request is destroyed just after this), so that once the
      // send settles nothing reads the caller's content any more; a content that hangs is waited for only so long.
      const cap = setTimeout(report, o.idleMs)
      void pumping.finally(() => {
        clearTimeout(cap)
        report()
      })
    }
    const headers: Record<string, string> = { ...o.headers }
    const expectContinue = 'stream' in o.body || o.body.expectContinue
    if (expectContinue) headers.expect = '100-continue'
    if ('bytes' in o.body) headers['content-length'] = String(o.body.bytes.length)

    const url = new URL(o.path.replace(/^\//, ''), o.target.base.href.endsWith('/') ? o.target.base : new URL(`${o.target.base.href}/`))
    const req = https.request(url, {
      method: o.method,
      headers,
      agent: o.agent,
      ca: [o.target.cert],
      cert: o.own.cert,
      key: o.own.key,
      // The chain check (ca) admits any certificate the peer's signs; only the registered one itself will do.
      checkServerIdentity: (_host: string, cert: PeerCertificate) =>
        cert.fingerprint256 === o.target.fingerprint
          ? undefined
          : new Error(`the server presented certificate sha256 ${cert.fingerprint256}, not the one ${o.target.label} registered (${o.target.fingerprint})`),
      timeout: o.idleMs,
    })
    const deadline = o.deadlineMs ? setTimeout(() => req.destroy(new Error(`no answer within ${o.deadlineMs} ms`)), o.deadlineMs) : undefined
    req.on('timeout', () => req.destroy(new Error(`no progress for ${o.idleMs} ms`)))
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (answered) return
      // The body's own failures reach here too: pipeline destroys the request with them.
      if (err instanceof ContentFailure) return settle(err)
      if (overflow) return settle({ kind: 'final', problem: overflow })
      const stale = req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')
      settle({ kind: 'retry', problem: describe(err), ...(stale ? { now: true } : {}) })
    })
    req.on('response', (res) => {
      answered = true
      const status = res.statusCode ?? 0
      if (status >= 200 && status < 300) {
        res.resume()
        res.once('end', () => settle({ kind: 'ok' }))
        res.once('error', () => settle({ kind: 'ok' }))
        return
      }
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        if (text.length < MAX_ANSWER_BYTES) text += chunk
      })
      const done = (): void => {
        const problem = `${status} ${answerText(text, res.statusMessage)}`
        settle(status === 401 || status === 408 || status === 429 || status >= 500 || status < 400 ? { kind: 'retry', problem } : { kind: 'final', problem })
        // The peer answered before taking the whole body: this connection cannot carry another request.
        if (!bodySent) req.destroy()
      }
      res.once('end', done)
      res.once('error', done)
    })

    const send = async (): Promise<void> => {
      if ('bytes' in o.body) {
        req.end(o.body.bytes, () => (bodySent = true))
        return
      }
      const { stream, size } = o.body
      async function* counted(): AsyncGenerator<Uint8Array> {
        let count = 0
        const it = stream[Symbol.asyncIterator]()
        let ended = false
        try {
          for (;;) {
            let next: IteratorResult<Uint8Array>
            try {
              next = await it.next()
            } catch (err) {
              ended = true
              throw new ContentFailure(err)
            }
            if (next.done) {
              ended = true
              return
            }
            count += next.value.length
            if (count > size) {
              overflow = `the content is longer than the announced ${size} bytes`
              throw new Error(overflow)
            }
            yield next.value
          }
        } finally {
          // Stopped early (refused, cut off, too long): let the content release what it holds (a file, say).
          if (!ended) await it.return?.()
        }
      }
      try {
        await pipeline(counted(), req)
        bodySent = true
      } catch (err) {
        if (err instanceof ContentFailure) {
          req.destroy()
          settle(err)
        } else if (overflow) {
          req.destroy()
          settle({ kind: 'final', problem: overflow })
        }
        // Anything else is the connection's failure, which the request's error handler reports.
      }
    }
    if (expectContinue) {
      req.once('continue', () => {
        pumping = send()
      })
      req.flushHeaders()
    } else void send()
  })
}

/** The peer's `error` text from its JSON answer, or the start of whatever it sent. */
function answerText(text: string, statusMessage: string | undefined): string {
  try {
    const parsed = JSON.parse(text) as { error?: unknown }
    if (typeof parsed.error === 'string') return parsed.error
  } catch {
    // not JSON
  }
  return text.trim().slice(0, 200) || statusMessage || 'no explanation'
}

function describe(err: NodeJS.ErrnoException): string {
  const message = errorMessage(err)
  return err.code && !message.includes(err.code) ? `${err.code}: ${message}` : message
}
