import { IpfsError } from './errors.js'

/**
 * A streaming multipart/form-data parser, just enough for `ipfs add`: parts come one after the other and each
 * body is streamed from the request as it arrives, so a file of any size passes through a few chunks of memory.
 * Contract: consume (or abandon) a part's body before asking for the next part; an unread rest is skipped.
 */
export interface Part {
  headers: Map<string, string>
  /** The `name` parameter of Content-Disposition (Kubo clients send `file`, `file-1`, `dir`...). */
  name: string
  /** The `filename` parameter, as sent (kubo-rpc-client URI-encodes it). */
  filename: string
  contentType: string
  body: AsyncIterable<Uint8Array>
}

const CRLF = Buffer.from('\r\n')
const MAX_LINE = 16 * 1024
const MAX_HEADERS = 64

function fail(message: string): never {
  throw new IpfsError('bad-request', `multipart: ${message}`)
}

export function boundaryOf(contentType: string | undefined): string {
  if (!contentType || !/^multipart\//i.test(contentType.trim())) {
    fail(`expected a multipart/form-data body, got ${contentType ? `"${contentType}"` : 'no Content-Type'}`)
  }
  const m = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType)
  const boundary = m?.[1] ?? m?.[2]
  // RFC 2046 limits boundaries to 70 characters; a longer one is a malformed header, not a big upload.
  if (!boundary || boundary.length > 70) fail('missing or invalid boundary in Content-Type')
  return boundary
}

/**
 * The length of the longest tail of `buf` that could be the start of `delim`: only those bytes must wait for
 * the next chunk. Usually 0, so the next chunk is used as received instead of being copied onto a leftover.
 */
function partialMatch(buf: Buffer, delim: Buffer): number {
  for (let k = Math.min(buf.length, delim.length - 1); k > 0; k--) {
    if (buf[buf.length - k] === delim[0] && buf.subarray(buf.length - k).equals(delim.subarray(0, k))) return k
  }
  return 0
}

/** Pulls bytes from an async source and finds delimiters across chunk edges. */
class ByteReader {
  // Starting with CRLF lets the first boundary be found with the same "CRLF--boundary" delimiter as the others.
  private buf: Buffer = Buffer.from(CRLF)
  private readonly it: AsyncIterator<Uint8Array>

  constructor(source: AsyncIterable<Uint8Array>) {
    this.it = source[Symbol.asyncIterator]()
  }

  private async fill(): Promise<boolean> {
    const r = await this.it.next()
    if (r.done) return false
    const chunk = Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength)
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk])
    return true
  }

  /** Yields the bytes before `delim` and consumes the delimiter; holds back only what could start a delimiter. */
  async *until(delim: Buffer): AsyncGenerator<Buffer> {
    for (;;) {
      const at = this.buf.indexOf(delim)
      if (at >= 0) {
        if (at > 0) {
          // The delimiter stays in the buffer until the consumer comes back for more, so a consumer who stops
          // at this last piece leaves the delimiter for `skip` to find.
          const out = this.buf.subarray(0, at)
          this.buf = this.buf.subarray(at)
          yield out
        }
        this.buf = this.buf.subarray(delim.length)
        return
      }
      const emit = this.buf.length - partialMatch(this.buf, delim)
      if (emit > 0) {
        // Advance before yielding, so that a consumer who stops here leaves the reader consistent.
        const out = this.buf.subarray(0, emit)
        this.buf = this.buf.subarray(emit)
        yield out
      }
      if (!(await this.fill())) fail('unexpected end of body')
    }
  }

  async line(): Promise<string> {
    const parts: Buffer[] = []
    let size = 0
    for await (const b of this.until(CRLF)) {
      size += b.length
      if (size > MAX_LINE) fail('header line too long')
      parts.push(b)
    }
    return Buffer.concat(parts).toString('utf8')
  }

  async skip(delim: Buffer): Promise<void> {
    for await (const _ of this.until(delim)) {
      // discard
    }
  }
}

function dispositionParams(value: string): Map<string, string> {
  const params = new Map<string, string>()
  const re = /;\s*([^=;\s]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g
  for (let m = re.exec(value); m; m = re.exec(value)) {
    const key = (m[1] ?? '').toLowerCase()
    const quoted = m[2]
    params.set(key, quoted !== undefined ? quoted.replace(/\\(.)/g, '$1') : (m[3] ?? '').trim())
  }
  return params
}

export async function* parseMultipart(source: AsyncIterable<Uint8Array>, boundary: string): AsyncGenerator<Part> {
  const reader = new ByteReader(source)
  const delim = Buffer.from(`\r\n--${boundary}`)
  await reader.skip(delim) // the preamble
  for (;;) {
    const rest = await reader.line()
    if (rest.startsWith('--')) return // the closing delimiter; the epilogue is ignored
    if (rest.trim() !== '') fail('garbage after boundary')
    const headers = new Map<string, string>()
    for (let line = await reader.line(); line !== ''; line = await reader.line()) {
      if (headers.size >= MAX_HEADERS) fail('too many part headers')
      const colon = line.indexOf(':')
      if (colon <= 0) fail(`malformed part header "${line.slice(0, 80)}"`)
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim())
    }
    const disposition = dispositionParams(headers.get('content-disposition') ?? '')
    let finished = false
    const body = (async function* () {
      yield* reader.until(delim)
      finished = true
    })()
    yield {
      headers,
      name: disposition.get('name') ?? '',
      filename: disposition.get('filename') ?? '',
      contentType: headers.get('content-type') ?? 'application/octet-stream',
      body,
    }
    if (!finished) {
      await body.return(undefined)
      await reader.skip(delim)
    }
  }
}
