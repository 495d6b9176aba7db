import fc from 'fast-check'

const ODD_CONTENT_TYPES = [
  undefined,
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'APPLICATION/JSON',
  'application/json;;;',
  'application/json; charset',
  'application/json; charset="',
  'application/problem+json',
  'application/x-www-form-urlencoded',
  'text/plain',
  'text/html',
  'multipart/form-data',
  'multipart/form-data; boundary=',
  'multipart/form-data; boundary=xyz',
  'multipart/mixed; boundary=xyz',
  'application/octet-stream',
  '',
  ' ',
  '*/*',
  'json',
  '/',
  'application/',
  '\u00ff\u00fe',
]

/** Media types a body may claim: right (most often, so that the framing is what is tested), wrong, parameterised, malformed. */
export const contentTypeArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 3, arbitrary: fc.constant('application/json') },
  { weight: 4, arbitrary: fc.constantFrom(...ODD_CONTENT_TYPES) },
)

/** How a body is framed on the wire. */
export type Framing =
  /** A correct Content-Length. */
  | { kind: 'length' }
  /** Chunked, cut into chunks of these sizes (cycled). */
  | { kind: 'chunked'; sizes: number[] }
  /** Content-Length declares `by` more bytes than are sent, then the client hangs up. */
  | { kind: 'over'; by: number }
  /** Content-Length declares `by` fewer bytes: the rest reads as a next request. */
  | { kind: 'under'; by: number }
  /** No length and no chunking: the bytes read as a next request. */
  | { kind: 'none' }
  /** A Content-Length that is not a number, or two that disagree, or both framings at once; then the client hangs up. */
  | { kind: 'bogus'; headers: [string, string][] }

export const framingArb: fc.Arbitrary<Framing> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ kind: 'length' as const }) },
  { weight: 3, arbitrary: fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 4 }).map((sizes) => ({ kind: 'chunked' as const, sizes })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 100_000 }).map((by) => ({ kind: 'over' as const, by })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 20 }).map((by) => ({ kind: 'under' as const, by })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom<[string, string][]>(
        [['Content-Length', 'abc']],
        [['Content-Length', '-1']],
        [['Content-Length', '1e3']],
        [['Content-Length', '99999999999999999999']],
        [['Content-Length', '9007199254740993']],
        [['Content-Length', ' 5 ']],
        [['Content-Length', '5'], ['Content-Length', '6']],
        [['Content-Length', '5, 5']],
        [['Content-Length', '5'], ['Transfer-Encoding', 'chunked']],
        [['Transfer-Encoding', 'gzip, chunked']],
        [['Transfer-Encoding', 'chunked, gzip']],
        [['Transfer-Encoding', 'identity']],
        [['Transfer-Encoding', 'bogus']],
        [['Transfer-Encoding', 'chunked'], ['Transfer-Encoding', 'chunked']],
      )
      .map((headers) => ({ kind: 'bogus' as const, headers })),
  },
)

/** The headers and bytes of `body` under a framing; `hangUp` when the client must stop sending. */
export function frame(body: Uint8Array, framing: Framing): { headers: [string, string][]; body: Uint8Array; hangUp: boolean } {
  const b = Buffer.from(body)
  switch (framing.kind) {
    case 'length':
      return { headers: [['Content-Length', String(b.length)]], body: b, hangUp: false }
    case 'chunked': {
      const parts: Buffer[] = []
      for (let at = 0, i = 0; at < b.length; i++) {
        const n = framing.sizes[i % framing.sizes.length]!
        const chunk = b.subarray(at, at + n)
        parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n'))
        at += n
      }
      parts.push(Buffer.from('0\r\n\r\n'))
      return { headers: [['Transfer-Encoding', 'chunked']], body: Buffer.concat(parts), hangUp: false }
    }
    case 'over':
      return { headers: [['Content-Length', String(b.length + framing.by)]], body: b, hangUp: true }
    case 'under':
      return { headers: [['Content-Length', String(Math.max(0, b.length - framing.by))]], body: b, hangUp: false }
    case 'none':
      return { headers: [], body: b, hangUp: false }
    case 'bogus':
      // Whatever the server makes of such framing, the body may be short of it (a chunked body that is not chunked,
      // a length past the bytes): the client stops sending, or the server would rightly wait for the rest.
      return { headers: framing.headers, body: b, hangUp: true }
  }
}

const ODD_HEADERS: [string, string][] = [
  ['Content-Encoding', 'gzip'],
  ['Content-Encoding', 'deflate'],
  ['Content-Encoding', 'br'],
  ['Content-Encoding', 'identity'],
  ['Content-Encoding', 'bogus'],
  ['Expect', '100-continue'],
  ['Expect', 'the-unexpected'],
  ['Accept', 'text/html'],
  ['Accept', 'application/xml'],
  ['Accept-Encoding', 'gzip, br'],
  ['Accept-Charset', 'ebcdic'],
  ['Connection', 'keep-alive'],
  ['Connection', 'Upgrade'],
  ['Upgrade', 'websocket'],
  ['X-Forwarded-For', '1.2.3.4, evil'],
  ['X-HTTP-Method-Override', 'DELETE'],
  ['Range', 'bytes=0-1'],
  ['Range', 'bytes=999999999-'],
  ['If-None-Match', '*'],
  ['Cookie', '__proto__=1'],
  ['Authorization', 'Bearer x'],
  ['Host', 'second.host'],
  ['__proto__', 'x'],
]

const latin1Char = fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c))

/** Headers besides the body's own: encodings the node does not speak, expectations, odd bytes, big values. */
export const extraHeadersArb: fc.Arbitrary<[string, string][]> = fc.array(
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...ODD_HEADERS) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,20}$/), fc.string({ unit: 'binary-ascii', maxLength: 30 }))
        .map(([k, v]): [string, string] => [`X-${k}`, v.replace(/[\r\n]/g, ' ')]),
    },
    { weight: 1, arbitrary: fc.string({ unit: latin1Char, maxLength: 10 }).map((v): [string, string] => ['X-Latin1', v]) },
    { weight: 1, arbitrary: fc.integer({ min: 4_000, max: 40_000 }).map((n): [string, string] => ['X-Big', 'b'.repeat(n)]) },
  ),
  { maxLength: 3 },
)
