/**
 * JSON text exactly as FireFly's Go code produces it. Every member hashes JSON bytes (data values, message
 * headers, groups, batch manifests), so one differing byte means a batch the others reject.
 *
 * - `compactJson` is Go's `json.Marshal(json.RawMessage(text))`: validate with Go's scanner rules, drop
 *   whitespace outside strings, keep key order, number text and escapes, and HTML-escape `<` `>` `&` U+2028 U+2029.
 * - `goJsonString` / `goJson` are Go's `json.Marshal` of strings and of the fixed-shape structs we hash.
 */
import { ParleyError } from './errors.js'

/** Go's encoding/json scanner refuses deeper nesting (`maxNestingDepth`); matching it keeps acceptance identical. */
export const GO_MAX_DEPTH = 10000

// Lone UTF-16 surrogates can only reach us from JS (bytes off the wire are decoded to U+FFFD already). They would
// become U+FFFD when encoded as UTF-8 for hashing, so make the text say what its bytes will be.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const LONE_SURROGATE_G = new RegExp(LONE_SURROGATE.source, 'g')

export function toWellFormed(s: string): string {
  return LONE_SURROGATE.test(s) ? s.replace(LONE_SURROGATE_G, '\uFFFD') : s
}

// Inside a string only these need a look: the end, escapes, control characters (invalid), and what Go HTML-escapes.
const STRING_STOP = /["\\<>&\u2028\u2029\u0000-\u001f]/g
const HTML_ESCAPES: Readonly<Record<number, string>> = {
  0x3c: '\\u003c',
  0x3e: '\\u003e',
  0x26: '\\u0026',
  0x2028: '\\u2028',
  0x2029: '\\u2029',
}

// After a backslash: `" \ / b f n r t` (and `u`, handled apart).
const SHORT_ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74])
const isDigit = (c: number): boolean => c >= 48 && c <= 57
const isHex = (c: number): boolean => isDigit(c) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70)
const isSpace = (c: number): boolean => c === 32 || c === 9 || c === 10 || c === 13

function describe(c: number): string {
  if (Number.isNaN(c)) return 'end of input'
  if (c === 0x27) return `character '\\''`
  if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029 || c === 0xfeff) {
    return `character U+${c.toString(16).toUpperCase().padStart(4, '0')}`
  }
  return `character '${String.fromCharCode(c)}'`
}

/** A 400 that says what is wrong and where, so a caller can find it in a multi-megabyte body. */
function syntaxError(src: string, at: number, what: string): ParleyError {
  let line = 1
  let lineStart = 0
  for (let p = src.indexOf('\n'); p !== -1 && p < at; p = src.indexOf('\n', p + 1)) {
    line++
    lineStart = p + 1
  }
  return new ParleyError('INVALID_JSON', `${what} at line ${line}, column ${at - lineStart + 1} (offset ${at})`)
}

const OBJECT = 0
const ARRAY = 1

/**
 * Go's `json.Compact` with HTML escaping, as `json.Marshal` applies it to a `json.RawMessage`. Throws
 * `ParleyError('INVALID_JSON')` for anything Go's decoder would refuse (trailing commas, comments, NaN, leading
 * zeros, control characters in strings, bad escapes, nesting beyond `maxDepth`, trailing garbage).
 */
export function compactJson(text: string, maxDepth = GO_MAX_DEPTH): string {
  const src = toWellFormed(text)
  const n = src.length
  // Output is built from runs of the source: an already-compact body costs one slice.
  let out = ''
  let copyFrom = 0
  let i = 0
  const stack: number[] = []

  const fail = (at: number, context: string): never => {
    const c = src.charCodeAt(at)
    throw syntaxError(src, at, Number.isNaN(c) ? 'unexpected end of JSON input' : `invalid ${describe(c)} ${context}`)
  }
  const skipSpace = (): void => {
    if (!isSpace(src.charCodeAt(i))) return
    if (i > copyFrom) out += src.slice(copyFrom, i)
    do i++
    while (isSpace(src.charCodeAt(i)))
    copyFrom = i
  }
  const scanString = (): void => {
    i++
    for (;;) {
      STRING_STOP.lastIndex = i
      const m = STRING_STOP.exec(src)
      if (m === null) return fail(n, 'in string literal')
      i = m.index
      const c = src.charCodeAt(i)
      if (c === 0x22) {
        i++
        return
      }
      if (c === 0x5c) {
        const e = src.charCodeAt(i + 1)
        if (e === 0x75) {
          for (let k = i + 2; k < i + 6; k++) if (!isHex(src.charCodeAt(k))) fail(k, 'in \\u hexadecimal character escape')
          i += 6
        } else if (SHORT_ESCAPES.has(e)) i += 2
        else fail(i + 1, 'in string escape code')
        continue
      }
      if (c < 0x20) fail(i, 'in string literal')
      if (i > copyFrom) out += src.slice(copyFrom, i)
      out += HTML_ESCAPES[c]
      copyFrom = ++i
    }
  }
  const scanNumber = (): void => {
    if (src.charCodeAt(i) === 0x2d) i++
    const c = src.charCodeAt(i)
    if (c === 0x30) i++
    else if (c >= 0x31 && c <= 0x39) while (isDigit(src.charCodeAt(++i)));
    else fail(i, 'in numeric literal')
    if (src.charCodeAt(i) === 0x2e) {
      if (!isDigit(src.charCodeAt(++i))) fail(i, 'after decimal point in numeric literal')
      while (isDigit(src.charCodeAt(++i)));
    }
    const e = src.charCodeAt(i)
    if (e === 0x65 || e === 0x45) {
      const s = src.charCodeAt(++i)
      if (s === 0x2b || s === 0x2d) i++
      if (!isDigit(src.charCodeAt(i))) fail(i, 'in exponent of numeric literal')
      while (isDigit(src.charCodeAt(++i)));
    }
  }
  const scanLiteral = (word: string): void => {
    for (let k = 1; k < word.length; k++) {
      if (src.charCodeAt(i + k) !== word.charCodeAt(k)) fail(i + k, `in literal ${word} (expecting '${word[k]}')`)
    }
    i += word.length
  }
  const scanKey = (): void => {
    skipSpace()
    if (src.charCodeAt(i) !== 0x22) fail(i, 'looking for beginning of object key string')
    scanString()
    skipSpace()
    if (src.charCodeAt(i) !== 0x3a) fail(i, 'after object key')
    i++
  }

  value: for (;;) {
    skipSpace()
    const c = src.charCodeAt(i)
    if (c === 0x7b || c === 0x5b) {
      if (stack.length >= maxDepth) throw syntaxError(src, i, `exceeded max depth of ${maxDepth} nested objects/arrays`)
      i++
      skipSpace()
      if (src.charCodeAt(i) === (c === 0x7b ? 0x7d : 0x5d)) i++
      else {
        stack.push(c === 0x7b ? OBJECT : ARRAY)
        if (c === 0x7b) scanKey()
        continue value
      }
    } else if (c === 0x22) scanString()
    else if (c === 0x2d || isDigit(c)) scanNumber()
    else if (c === 0x74) scanLiteral('true')
    else if (c === 0x66) scanLiteral('false')
    else if (c === 0x6e) scanLiteral('null')
    else fail(i, 'looking for beginning of value')

    // A value is complete: close as many containers as end here, or move on to the next member.
    while (stack.length > 0) {
      skipSpace()
      const top = stack[stack.length - 1]
      const d = src.charCodeAt(i)
      if (d === 0x2c) {
        i++
        if (top === OBJECT) scanKey()
        continue value
      }
      if (d !== (top === OBJECT ? 0x7d : 0x5d)) fail(i, top === OBJECT ? 'after object key:value pair' : 'after array element')
      i++
      stack.pop()
    }
    break
  }
  skipSpace()
  if (i < n) fail(i, 'after top-level value')
  return copyFrom === 0 ? src : out + src.slice(copyFrom, n)
}

/** Go's `json.Marshal(string)` (Go ≥ 1.22: `\b` and `\f` get short escapes; earlier releases wrote `\u0008`/`\u000c`). */
export function goJsonString(s: string): string {
  const src = toWellFormed(s)
  let out = '"'
  let from = 0
  for (let i = 0; i < src.length; i++) {
    const c = src.charCodeAt(i)
    let esc: string
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c && c !== 0x3c && c !== 0x3e && c !== 0x26 && c !== 0x2028 && c !== 0x2029) {
      continue
    } else if (c === 0x22) esc = '\\"'
    else if (c === 0x5c) esc = '\\\\'
    else if (c === 0x0a) esc = '\\n'
    else if (c === 0x0d) esc = '\\r'
    else if (c === 0x09) esc = '\\t'
    else if (c === 0x08) esc = '\\b'
    else if (c === 0x0c) esc = '\\f'
    else esc = HTML_ESCAPES[c] ?? '\\u00' + c.toString(16).padStart(2, '0')
    out += src.slice(from, i) + esc
    from = i + 1
  }
  return out + src.slice(from) + '"'
}

/**
 * Pre-rendered JSON to embed as is, like a Go `json.RawMessage` field. Go compacts a RawMessage when marshalling
 * it, so the text is compacted (and validated) here too; `trusted` skips that for text that already came out of
 * `compactJson` or a parsed node's `raw`.
 */
export class RawJson {
  readonly raw: string
  constructor(text: string, trusted = false) {
    this.raw = trusted ? text : compactJson(text)
  }
}

/** What `goJson` can write (it takes `unknown` so that interface-typed records need no cast, and checks at run time). */
export type GoJsonValue =
  | string
  | number
  | bigint
  | boolean
  | null
  | undefined
  | RawJson
  | GoStruct
  | readonly GoJsonValue[]
  | { readonly [key: string]: GoJsonValue }

/**
 * An object with an explicit field order, like a Go struct. Plain JS objects put integer-like keys first
 * whatever the insertion order, so hashed shapes with such keys need this. A field whose value is `undefined` is
 * left out, which is how callers express Go's `omitempty`.
 */
export class GoStruct {
  readonly fields: ReadonlyArray<readonly [string, unknown]>
  constructor(fields: ReadonlyArray<readonly [string, unknown]>) {
    this.fields = fields
  }
}

export const goStruct = (...fields: Array<readonly [string, unknown]>): GoStruct => new GoStruct(fields)

function goNumber(v: number): string {
  // Go rejects these (UnsupportedValueError); so do we rather than emit something no Go member would produce.
  if (!Number.isFinite(v)) throw new ParleyError('INTERNAL', `cannot encode ${v} as JSON`)
  // JS and Go share the shortest round-trip digits and the 1e-6 / 1e21 exponent cut-offs; only -0 differs.
  return Object.is(v, -0) ? '-0' : String(v)
}

const isPlainObject = (v: object): boolean => {
  const proto: unknown = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

/**
 * Go's `json.Marshal` for the values we hash and send: strings, finite numbers, bigints, booleans, null, arrays,
 * `GoStruct`s and plain objects (in key order), and `RawJson`. `undefined` members are omitted. Anything else
 * (undefined array items, functions, Dates, Maps, other class instances) is a programming error and throws, rather
 * than being written in some form no Go member would produce.
 */
export function goJson(value: unknown): string {
  const parts: string[] = []
  const write = (v: unknown, depth: number): void => {
    if (depth > GO_MAX_DEPTH) throw new ParleyError('INTERNAL', 'value nests too deeply to encode as JSON')
    if (v === null) parts.push('null')
    else if (typeof v === 'string') parts.push(goJsonString(v))
    else if (typeof v === 'number') parts.push(goNumber(v))
    else if (typeof v === 'bigint') parts.push(v.toString())
    else if (typeof v === 'boolean') parts.push(v ? 'true' : 'false')
    else if (v instanceof RawJson) parts.push(v.raw)
    else if (v instanceof GoStruct) writeFields(v.fields, depth)
    else if (Array.isArray(v)) {
      parts.push('[')
      for (let k = 0; k < v.length; k++) {
        if (k > 0) parts.push(',')
        write(v[k], depth + 1)
      }
      parts.push(']')
    } else if (typeof v === 'object' && isPlainObject(v)) writeFields(Object.entries(v), depth)
    else throw new ParleyError('INTERNAL', `cannot encode ${v === undefined ? 'undefined' : typeof v === 'object' ? (v.constructor?.name ?? 'object') : typeof v} as JSON`)
  }
  const writeFields = (fields: ReadonlyArray<readonly [string, unknown]>, depth: number): void => {
    parts.push('{')
    let first = true
    for (const [key, v] of fields) {
      if (v === undefined) continue
      if (!first) parts.push(',')
      first = false
      parts.push(goJsonString(key), ':')
      write(v, depth + 1)
    }
    parts.push('}')
  }
  write(value, 0)
  return parts.join('')
}
