/**
 * A lean HTTP/1.1 client for the benchmark: keep-alive TCP connections per origin, each request written with one
 * `write` (head and body together), each response parsed straight from the socket's buffers (a status line,
 * `content-length` or chunked bodies, `connection: close`). On a 2-core machine every millisecond the benchmark
 * spends is taken from the members it measures: `node:http`'s client (an IncomingMessage stream, header objects,
 * an agent's bookkeeping per request) cost ~0.25 ms of CPU per POST during a broadcast burst; the same client serves
 * the bare-server baseline, so the ratio between the two stays like for like.
 *
 * Only what a loopback benchmark needs: no TLS, no proxies, no 1xx handling beyond skipping it, no pipelining.
 */
import net from 'node:net'

export interface Http1Response {
  status: number
  body: Buffer
}

interface Pending {
  method: string
  path: string
  body: string | undefined
  deadline: number
  /** Sent again once, on a fresh connection, when a reused one was closed before any byte of the answer came. */
  mayRetry: boolean
  resolve(res: Http1Response): void
  reject(err: Error): void
  /** The deadline's timer while it waits for a connection. */
  queued?: NodeJS.Timeout
}

const CRLF_CRLF = Buffer.from('\r\n\r\n')

/** One origin's connections: idle ones, and requests waiting for one when `maxSockets` are busy. */
export class Http1Pool {
  private readonly idle: Connection[] = []
  private readonly waiting: Pending[] = []
  private open = 0

  constructor(
    readonly host: string,
    readonly port: number,
    public maxSockets: number,
  ) {}

  request(method: string, path: string, body: string | undefined, deadline: number): Promise<Http1Response> {
    return new Promise<Http1Response>((resolve, reject) => this.dispatch({ method, path, body, deadline, mayRetry: true, resolve, reject }))
  }

  private dispatch(p: Pending): void {
    const conn = this.idle.pop()
    if (conn) conn.run(p)
    else if (this.open < this.maxSockets) this.connect().run(p)
    else this.queue(p)
  }

  /** Waits for a connection; at its deadline it leaves the line, never sent. */
  private queue(p: Pending, first = false): void {
    if (first) this.waiting.unshift(p)
    else this.waiting.push(p)
    p.queued = setTimeout(() => {
      const i = this.waiting.indexOf(p)
      if (i >= 0) this.waiting.splice(i, 1)
      p.reject(new Error(`${p.method} ${p.path} timed out waiting for a connection`))
    }, Math.max(1, p.deadline - Date.now()))
  }

  private connect(): Connection {
    this.open++
    return new Connection(this, net.connect({ host: this.host, port: this.port, noDelay: true }))
  }

  /** A connection finished a request and can take another. */
  released(conn: Connection): void {
    const next = this.waiting.shift()
    if (next) conn.run(next)
    else this.idle.push(conn)
  }

  /** A connection is gone; a waiting request gets a new one. */
  closed(conn: Connection): void {
    this.open--
    const i = this.idle.indexOf(conn)
    if (i >= 0) this.idle.splice(i, 1)
    const next = this.waiting.shift()
    if (next) this.dispatch(next)
  }

  /** Once, on a fresh connection if the limit allows (else first in line for the next free one). */
  retry(p: Pending): void {
    const again = { ...p, mayRetry: false }
    if (this.open < this.maxSockets) this.connect().run(again)
    else this.queue(again, true)
  }

  destroy(): void {
    for (const c of this.idle.splice(0)) c.close()
  }
}

/** One keep-alive connection, carrying one request at a time. */
class Connection {
  private current: Pending | undefined
  private timer: NodeJS.Timeout | undefined
  private buf: Buffer = Buffer.alloc(0)
  /** Requests this connection has answered: a reset on a used connection may be the server closing it while idle. */
  private served = 0
  private gotBytes = false
  private dead = false

  constructor(
    private readonly pool: Http1Pool,
    private readonly socket: net.Socket,
  ) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk))
    socket.on('error', (err) => this.onClose(err))
    socket.on('close', () => this.onClose(new Error('the server closed the connection before answering')))
  }

  run(p: Pending): void {
    clearTimeout(p.queued)
    this.current = p
    this.gotBytes = false
    const timeoutMs = Math.max(1, p.deadline - Date.now())
    this.timer = setTimeout(() => this.fail(new Error(`${p.method} ${p.path} timed out after ${timeoutMs} ms`), false), timeoutMs)
    const head = `${p.method} ${p.path} HTTP/1.1\r\nHost: ${this.pool.host}:${this.pool.port}\r\n`
    this.socket.write(
      p.body === undefined
        ? `${head}\r\n`
        : `${head}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(p.body)}\r\n\r\n${p.body}`,
    )
  }

  close(): void {
    this.socket.destroy()
  }

  private onData(chunk: Buffer): void {
    this.gotBytes = true
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk])
    if (this.current === undefined) return
    let parsed: Parsed | undefined
    try {
      parsed = parseResponse(this.buf)
    } catch (err) {
      this.fail(err as Error, false)
      return
    }
    if (parsed === undefined) return
    const p = this.current
    this.current = undefined
    clearTimeout(this.timer)
    this.buf = this.buf.subarray(parsed.consumed)
    this.served++
    if (parsed.close) this.close()
    else this.pool.released(this)
    p.resolve({ status: parsed.status, body: parsed.body })
  }

  private onClose(err: Error): void {
    if (this.dead) return
    this.dead = true
    this.socket.destroy()
    this.pool.closed(this)
    // A connection that had answered before and then was closed before any byte of this answer: the server dropped
    // an idle keep-alive connection as the request went out. It read nothing of the request: sending it again on a
    // fresh connection neither loses nor duplicates it.
    if (this.current) this.fail(err, this.served > 0 && !this.gotBytes)
  }

  private fail(err: Error, retriable: boolean): void {
    const p = this.current
    if (p === undefined) return
    this.current = undefined
    clearTimeout(this.timer)
    if (!this.dead) {
      this.dead = true
      this.socket.destroy()
      this.pool.closed(this)
    }
    if (retriable && p.mayRetry) this.pool.retry(p)
    else p.reject(err)
  }
}

interface Parsed {
  status: number
  body: Buffer
  /** Bytes of `buf` this response took. */
  consumed: number
  /** The server said it closes the connection after this answer. */
  close: boolean
}

/** One complete response at the start of `buf`, or undefined while it is incomplete. Throws on what is not HTTP/1.x. */
export function parseResponse(buf: Buffer): Parsed | undefined {
  let start = 0
  for (;;) {
    const end = buf.indexOf(CRLF_CRLF, start)
    if (end < 0) return undefined
    const head = buf.toString('latin1', start, end)
    const lines = head.split('\r\n')
    const m = /^HTTP\/1\.([01]) (\d{3})/.exec(lines[0] ?? '')
    if (!m) throw new Error(`not an HTTP/1.x response: ${JSON.stringify(lines[0]?.slice(0, 80))}`)
    const status = Number(m[2])
    let length: number | undefined
    let chunked = false
    let close = m[1] === '0'
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!
      const colon = line.indexOf(':')
      if (colon < 0) continue
      const name = line.slice(0, colon).trim().toLowerCase()
      const value = line.slice(colon + 1).trim().toLowerCase()
      if (name === 'content-length') length = Number(value)
      else if (name === 'transfer-encoding') chunked = value.split(',').some((v) => v.trim() === 'chunked')
      else if (name === 'connection') close = value.split(',').some((v) => v.trim() === 'close')
    }
    const bodyStart = end + 4
    // An interim answer (100 Continue, 103 Early Hints): the real one follows.
    if (status >= 100 && status < 200) {
      start = bodyStart
      continue
    }
    if (chunked) {
      const body = readChunked(buf, bodyStart)
      return body && { status, body: body.body, consumed: body.end, close }
    }
    if (length !== undefined) {
      if (!Number.isSafeInteger(length) || length < 0) throw new Error(`bad content-length in: ${head.slice(0, 200)}`)
      if (buf.length < bodyStart + length) return undefined
      return { status, body: buf.subarray(bodyStart, bodyStart + length), consumed: bodyStart + length, close }
    }
    // No length and not chunked: only a bodiless answer can be told complete without the connection closing.
    if (status === 204 || status === 304) return { status, body: Buffer.alloc(0), consumed: bodyStart, close }
    throw new Error(`a ${status} answer with neither content-length nor chunked encoding (this client does not read to close)`)
  }
}

function readChunked(buf: Buffer, from: number): { body: Buffer; end: number } | undefined {
  const parts: Buffer[] = []
  let at = from
  for (;;) {
    const eol = buf.indexOf('\r\n', at, 'latin1')
    if (eol < 0) return undefined
    const size = Number.parseInt(buf.toString('latin1', at, eol).split(';')[0]!.trim(), 16)
    if (!Number.isSafeInteger(size) || size < 0) throw new Error('bad chunk size in a chunked answer')
    if (size === 0) {
      // The last chunk, then trailers (none expected), then an empty line.
      const end = buf.indexOf(CRLF_CRLF, eol)
      return end < 0 ? undefined : { body: Buffer.concat(parts), end: end + 4 }
    }
    const dataStart = eol + 2
    if (buf.length < dataStart + size + 2) return undefined
    parts.push(buf.subarray(dataStart, dataStart + size))
    at = dataStart + size + 2
  }
}
