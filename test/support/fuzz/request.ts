/**
 * One request as the fuzzer sends it: the exact bytes of the request line, the headers in order (duplicates and
 * all) and the body, so that what a generator makes is what goes on the wire and a failure can be replayed as is.
 */
export interface FuzzRequest {
  /** The generator that made it, for the counts and the report. */
  family: string
  method: string
  /** Path and query string exactly as written on the request line. */
  target: string
  /** Besides `Host`, which the client always writes first; `Connection: close` is added unless one is given. */
  headers: [string, string][]
  body: Uint8Array
  /**
   * The client stops sending (half-closes) after the body: for a request that declares more body than it sends.
   * Such a request cannot be answered; the node must only survive it.
   */
  hangUp?: boolean
}

/** A JSON request with a correct Content-Length. */
export function jsonRequest(family: string, method: string, target: string, body: string | Uint8Array, contentType = 'application/json'): FuzzRequest {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body
  return { family, method, target, headers: [['Content-Type', contentType], ['Content-Length', String(bytes.length)]], body: bytes }
}

const PREVIEW_BYTES = 400

/**
 * The request as a reader can replay it: method, target, headers, and the body as text when it is valid UTF-8
 * (else base64), cut to its first bytes with its full length when it is long.
 */
export function describeRequest(r: FuzzRequest): string {
  const body = Buffer.from(r.body)
  let shown: string
  try {
    shown = JSON.stringify(new TextDecoder('utf-8', { fatal: true }).decode(body.subarray(0, PREVIEW_BYTES)))
  } catch {
    shown = `base64:${body.subarray(0, PREVIEW_BYTES).toString('base64')}`
  }
  const cut = body.length > PREVIEW_BYTES ? ` … (${body.length} bytes in all)` : ''
  const headers = r.headers.map(([k, v]) => `${k}: ${v.length > 200 ? `${v.slice(0, 200)}… (${v.length} chars)` : v}`).join(' | ')
  const target = r.target.length > 300 ? `${r.target.slice(0, 300)}… (${r.target.length} chars)` : r.target
  return `[${r.family}] ${r.method} ${target}${headers ? ` | ${headers}` : ''}${r.hangUp ? ' | (client half-closes)' : ''}${body.length ? ` | body ${shown}${cut}` : ''}`
}
