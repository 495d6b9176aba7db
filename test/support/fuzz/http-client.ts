import { connect } from 'node:net'
import type { FuzzRequest } from './request.js'

/** What came back for one request. Header names are lower-cased; a repeated header's values are joined by ", ". */
export type Outcome =
  | { kind: 'answered'; status: number; headers: ReadonlyMap<string, string>; body: Buffer; ms: number }
  /** Nothing complete within the time limit. */
  | { kind: 'hang'; ms: number }
  /** The connection closed (or failed) before a complete answer. */
  | { kind: 'dropped'; reason: string; ms: number }

export interface Target {
  host: string
  port: number
}

/**
 * Sends one request over its own socket, byte for byte, and reads the answer with a minimal HTTP/1.1 parser:
 * Node's own client would refuse to send most of what the fuzzer makes (unknown methods, lying Content-Length,
 * raw bytes in the target) and would hide what the server really wrote.
 */
export function sendRaw(target: Target, req: FuzzRequest, timeoutMs: number): Promise<Outcome> {
  const t0 = Date.now()
  const ms = (): number => Date.now() - t0
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let settled = false
    const socket = connect({ host: target.host, port: target.port })
    const finish = (o: Outcome): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve(o)
    }
    const timer = setTimeout(() => finish({ kind: 'hang', ms: ms() }), timeoutMs)
    socket.on('connect', () => {
      socket.write(encodeHead(target, req))
      if (req.body.length > 0) socket.write(req.body)
      if (req.hangUp) socket.end()
    })
    socket.on('data', (c: Buffer) => {
      chunks.push(c)
      const parsed = parseResponse(Buffer.concat(chunks), req.method, false)
      if (parsed) finish({ kind: 'answered', ...parsed, ms: ms() })
    })
    const closed = (reason: string): void => {
      // An answer framed by the end of the connection, or one complete before a reset of the sending side.
      const parsed = parseResponse(Buffer.concat(chunks), req.method, true)
      finish(parsed ? { kind: 'answered', ...parsed, ms: ms() } : { kind: 'dropped', reason, ms: ms() })
    }
    socket.on('error', (err: NodeJS.ErrnoException) => closed(err.code ?? err.message))
    socket.on('close', () => closed(chunks.length === 0 ? 'closed without a byte' : 'closed mid-answer'))
  })
}

function encodeHead(target: Target, req: FuzzRequest): Buffer {
  const lines = [`${req.method} ${req.target} HTTP/1.1`, `Host: ${target.host}:${target.port}`]
  for (const [k, v] of req.headers) lines.push(`${k}: ${v}`)
  if (!req.headers.some(([k]) => k.toLowerCase() === 'connection')) lines.push('Connection: close')
  // latin1: a generator's odd header bytes go out as the single bytes it meant.
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1')
}

interface Parsed {
  status: number
  headers: Map<string, string>
  body: Buffer
}

/** The final answer in `buf` once it is complete (interim 1xx answers skipped); `atEnd` when no more bytes will come. */
export function parseResponse(buf: Buffer, method: string, atEnd: boolean): Parsed | undefined {
  let rest = buf
  for (;;) {
    const headEnd = rest.indexOf('\r\n\r\n')
    if (headEnd < 0) return undefined
    const [statusLine = '', ...headerLines] = rest.subarray(0, headEnd).toString('latin1').split('\r\n')
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)
    if (!m) return atEnd ? { status: 0, headers: new Map(), body: rest } : undefined
    const status = Number(m[1])
    const headers = new Map<string, string>()
    for (const line of headerLines) {
      const i = line.indexOf(':')
      if (i <= 0) continue
      const k = line.slice(0, i).trim().toLowerCase()
      const v = line.slice(i + 1).trim()
      headers.set(k, headers.has(k) ? `${headers.get(k)}, ${v}` : v)
    }
    const after = rest.subarray(headEnd + 4)
    if (status >= 100 && status < 200) {
      rest = after
      continue
    }
    if (method === 'HEAD' || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0) }
    if (/\bchunked\b/i.test(headers.get('transfer-encoding') ?? '')) {
      const body = dechunk(after)
      return body ? { status, headers, body } : undefined
    }
    const length = headers.get('content-length')
    if (length !== undefined) {
      const n = Number(length)
      if (after.length >= n) return { status, headers, body: after.subarray(0, n) }
      return undefined
    }
    return atEnd ? { status, headers, body: after } : undefined
  }
}

/** A chunked body once its last chunk has arrived. */
function dechunk(buf: Buffer): Buffer | undefined {
  const parts: Buffer[] = []
  let at = 0
  for (;;) {
    const lineEnd = buf.indexOf('\r\n', at)
    if (lineEnd < 0) return undefined
    const size = parseInt(buf.subarray(at, lineEnd).toString('latin1'), 16)
    if (!Number.isFinite(size)) return undefined
    if (size === 0) return Buffer.concat(parts)
    const start = lineEnd + 2
    if (buf.length < start + size + 2) return undefined
    parts.push(buf.subarray(start, start + size))
    at = start + size + 2
  }
}
