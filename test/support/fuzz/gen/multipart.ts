import fc from 'fast-check'
import { junkText } from './text.js'
import type { Seeds } from './seeds.js'
import { encodeURIComponentSafe } from './routes.js'

/** One part as written: its header lines (already formatted) and its bytes. */
interface Part {
  headers: string[]
  body: Uint8Array
}

export interface MultipartBody {
  contentType: string
  body: Uint8Array
}

/**
 * Boundaries: tokens (which stand unquoted in the header), RFC 2046's other characters (which a header must quote),
 * and boundaries that break the rules (too long, empty, quotes, spaces, non-ASCII).
 */
const boundaryArb = fc.oneof(
  { weight: 6, arbitrary: fc.stringMatching(/^[A-Za-z0-9_.-]{1,70}$/) },
  { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9'()+_,.\/:=?-]{1,70}$/) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', '"', 'a b', '--', 'x'.repeat(71), 'x'.repeat(300), 'é', 'a;b', 'a\tb') },
)

/** The Content-Type a careful client writes: the boundary quoted when it is not a token. */
const formType = (b: string): string => (/^[A-Za-z0-9_.-]+$/.test(b) ? `multipart/form-data; boundary=${b}` : `multipart/form-data; boundary="${b}"`)

const FIELD_NAMES = ['autometa', 'metadata', 'validator', 'datatype.name', 'datatype.version', 'datatype', 'file', 'id', 'hash', 'value', '__proto__', 'constructor']

function fieldValueArb(seeds: Seeds): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('true', 'false', '', '1', 'json', 'none', 'definition', seeds.datatype.name, seeds.datatype.version, '{"a":1}', '{"n":1}', '[1,2]', '{"a":', '"x"', 'null', '1e999') },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 6000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`) },
    { weight: 2, arbitrary: junkText },
  )
}

/** Content-Disposition lines of a field, and what a sloppy client writes instead. */
function dispositionArb(name: string): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant(`Content-Disposition: form-data; name="${name}"`) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        undefined,
        'Content-Disposition: form-data',
        'Content-Disposition: attachment; name="x"',
        `Content-Disposition: form-data; name=${name}`,
        `Content-Disposition: form-data; name="${name}"; name="other"`,
        'Content-Disposition: form-data; name="',
        'Content-Disposition: ;;;',
        'Content-Disposition:',
      ),
    },
  )
}

const filenameArb = fc.oneof(
  fc.constantFrom('a.txt', 'data.json', '', '.', '..', '../../etc/passwd', 'C:\\x\\y.bin', 'dir/sub/f.bin', 'é.txt', 'a"b.txt', 'x'.repeat(1000)),
  junkText.map((t) => t.replace(/["\r\n]/g, '_')),
)

function filePartArb(): fc.Arbitrary<Part> {
  return fc
    .record({
      name: fc.constantFrom('file', 'upload', 'x', ''),
      filename: filenameArb,
      star: fc.boolean(),
      type: fc.constantFrom(undefined, 'text/plain', 'application/json', 'application/octet-stream', 'image/png; charset=x', 'bogus', ''),
      body: fc.oneof(fc.uint8Array({ maxLength: 2048 }), fc.constantFrom(new Uint8Array(0), Buffer.from('{"a":1}'), Buffer.from('\r\n--'), Buffer.from('--x--'))),
    })
    .map(({ name, filename, star, type, body }) => ({
      headers: [
        star ? `Content-Disposition: form-data; name="${name}"; filename*=UTF-8''${encodeURIComponentSafe(filename)}` : `Content-Disposition: form-data; name="${name}"; filename="${filename}"`,
        ...(type !== undefined ? [`Content-Type: ${type}`] : []),
      ],
      body,
    }))
}

/** The fields an upload takes, with values that fit them: most forms are ones a real client would send. */
function sensibleFieldArb(seeds: Seeds): fc.Arbitrary<[string, string]> {
  return fc.oneof(
    fc.tuple(fc.constant('autometa'), fc.constantFrom('true', 'false', '', 'TRUE', '1')),
    fc.tuple(fc.constant('metadata'), fc.oneof(fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)), fc.string({ maxLength: 30 }))),
    fc.tuple(fc.constant('validator'), fc.constantFrom('json', 'none', '')),
    fc.tuple(fc.constant('datatype.name'), fc.constantFrom(seeds.datatype.name, 'nosuch')),
    fc.tuple(fc.constant('datatype.version'), fc.constantFrom(seeds.datatype.version, '9')),
  )
}

function fieldPartArb(seeds: Seeds): fc.Arbitrary<Part> {
  const anyField = fc.tuple(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...FIELD_NAMES) }, { weight: 1, arbitrary: junkText.map((t) => t.replace(/["\r\n]/g, '_')) }), fieldValueArb(seeds))
  return fc
    .oneof({ weight: 3, arbitrary: sensibleFieldArb(seeds) }, { weight: 1, arbitrary: anyField })
    .chain(([name, value]) => dispositionArb(name).map((d): Part => ({ headers: d ? [d] : [], body: Buffer.from(value, 'utf8') })))
}

interface Shape {
  preamble: string
  epilogue: string
  closing: 'close' | 'missing' | 'no-crlf' | 'wrong-boundary'
  lf: boolean
  noBlankLine: boolean
}

const WELL_FORMED: Shape = { preamble: '', epilogue: '', closing: 'close', lf: false, noBlankLine: false }

/** How the body around the parts is written: well formed as often as not, else with one departure from the format. */
const shapeArb: fc.Arbitrary<Shape> = fc.oneof(
  { weight: 8, arbitrary: fc.constant(WELL_FORMED) },
  {
    weight: 8,
    arbitrary: fc.constantFrom<Partial<Shape>>(
      { preamble: 'preamble text\r\n' },
      { preamble: '--\r\n' },
      { epilogue: '\r\nepilogue' },
      { epilogue: 'trailing garbage' },
      { closing: 'missing' },
      { closing: 'no-crlf' },
      { closing: 'wrong-boundary' },
      { lf: true },
      { noBlankLine: true },
    ).map((d) => ({ ...WELL_FORMED, ...d })),
  },
)

/**
 * Uploads: fields and one file in the order FireFly's SDK sends them, and every way of getting that wrong — file
 * first, no file, two files, a field named `file`, parts without headers, a missing or foreign closing boundary,
 * LF line ends, many parts, and a Content-Type whose boundary is absent, quoted, too long or not the one used.
 */
export function multipartArb(seeds: Seeds): fc.Arbitrary<MultipartBody> {
  const partsArb = fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.array(fieldPartArb(seeds), { maxLength: 4 }), filePartArb()).map(([fields, file]) => [...fields, file]) },
    { weight: 2, arbitrary: fc.array(fc.oneof(fieldPartArb(seeds), filePartArb()), { maxLength: 5 }) },
    { weight: 1, arbitrary: fc.integer({ min: 33, max: 80 }).chain((n) => fc.array(fieldPartArb(seeds), { minLength: n, maxLength: n })) },
  )
  const headerArb = fc.constantFrom(
    (b: string) => `multipart/form-data; boundary=${b}`,
    (b: string) => `multipart/form-data; boundary="${b}"`,
    (b: string) => `Multipart/Form-Data; BOUNDARY=${b}`,
    (b: string) => `multipart/form-data; charset=utf-8; boundary=${b}`,
    (_b: string) => 'multipart/form-data',
    (b: string) => `multipart/form-data; boundary=${b}; boundary=other`,
    (b: string) => `multipart/form-data; boundary=${b}x`,
    (b: string) => `multipart/mixed; boundary=${b}`,
  )
  // Mostly the plain header, so that the body's own faults are what is tested; now and then an odd one.
  const oddHeaderArb = fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: headerArb })
  return fc.tuple(boundaryArb, partsArb, shapeArb, oddHeaderArb).map(([boundary, parts, shape, oddHeader]) => ({
    contentType: oddHeader ? oddHeader(boundary) : formType(boundary),
    body: encodeMultipart(boundary, parts, shape),
  }))
}

function encodeMultipart(boundary: string, parts: Part[], shape: Shape): Uint8Array {
  const nl = shape.lf ? '\n' : '\r\n'
  const out: Buffer[] = [Buffer.from(shape.preamble)]
  for (const p of parts) {
    out.push(Buffer.from(`--${boundary}${nl}${p.headers.map((h) => h + nl).join('')}${shape.noBlankLine && p.headers.length === 0 ? '' : nl}`, 'utf8'), Buffer.from(p.body), Buffer.from(nl))
  }
  if (shape.closing === 'close') out.push(Buffer.from(`--${boundary}--${nl}`))
  else if (shape.closing === 'no-crlf') out.push(Buffer.from(`--${boundary}--`))
  else if (shape.closing === 'wrong-boundary') out.push(Buffer.from(`--${boundary}X--${nl}`))
  out.push(Buffer.from(shape.epilogue))
  return Buffer.concat(out)
}
