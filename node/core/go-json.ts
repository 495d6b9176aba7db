/**
 * JSON text exactly as FireFly's Go code produces it. Every member hashes JSON bytes (data values, message
 * headers, groups, batch manifests), so one differing byte means a batch the others reject.
 *
 * - `compactJson` is Go's `json.Marshal(json.RawMessage(text))`: validate with Go's scanner rules, drop
 *   whitespace outside strings, keep key order, number text and escapes, and HTML-escape `<` `>` `&` U+2028 U+2029.
 * - `goJsonString` / `goJson` are Go's `json.Marshal` of strings and of the fixed-shape structs we hash.
 */
import { randomBytes } from 'node:crypto'
import { ParleyError } from './errors.js'

/** Go's encoding/json scanner refuses deeper nesting (`maxNestingDepth`); matching it keeps acceptance identical. */
export const GO_MAX_DEPTH = 10000

/** ES2024's well-formed string methods, which Node 20's V8 has and this project's ES2022 typings leave out. */
interface WellFormed {
  isWellFormed(): boolean
  toWellFormed(): string
}

// Lone UTF-16 surrogates can only reach us from JS (bytes off the wire are decoded to U+FFFD already). They would
// become U+FFFD when encoded as UTF-8 for hashing, so make the text say what its bytes will be. V8's own check answers
// a one-byte string at once; the lookbehind regular expression used before scanned a batch's whole text (~1 ms per
// 60 KB batch on a receiver).
function toWellFormed(s: string): string {
  const w = s as unknown as WellFormed
  return w.isWellFormed() ? s : w.toWellFormed()
}

const HTML_ESCAPES: Readonly<Record<number, string>> = {
  0x3c: '\\u003c',
  0x3e: '\\u003e',
  0x26: '\\u0026',
  0x2028: '\\u2028',
  0x2029: '\\u2029',
}

const HEX_DIGITS = Uint16Array.from('0123456789abcdef', (d) => d.charCodeAt(0))
const isHtmlUnsafe = (c: number): boolean => c === 0x3c || c === 0x3e || c === 0x26 || c === 0x2028 || c === 0x2029

// After a backslash: `" \ / b f n r t` (and `u`, handled apart).
const SHORT_ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74])
const isDigit = (c: number): boolean => c >= 48 && c <= 57
const isHex = (c: number): boolean => isDigit(c) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70)

function describe(c: number): string {
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

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1

function utf16ToString(units: Uint16Array, length: number): string {
  if (LITTLE_ENDIAN) return Buffer.from(units.buffer, units.byteOffset, length * 2).toString('utf16le')
  // fromCharCode in slices: one call per character is slow, one call for everything overflows the stack.
  const parts: string[] = []
  for (let k = 0; k < length; k += 8192) {
    parts.push(String.fromCharCode.apply(null, Array.from(units.subarray(k, Math.min(k + 8192, length)))))
  }
  return parts.join('')
}

// Scanner states: what the next significant character may be.
const VALUE = 0 // a value (after `:`, `,` in an array, or at the start)
const VALUE_OR_CLOSE = 1 // a value or `]` (after `[`)
const KEY = 2 // a key string (after `,` in an object)
const KEY_OR_CLOSE = 3 // a key string or `}` (after `{`)
const COLON = 4 // `:` after a key
const AFTER = 5 // `,` or the closer of the enclosing container, or the end of input at the top
const OBJECT = 1
const ARRAY = 2

/**
 * A run of string characters that JSON and Go's HTML-safe output leave as they are: not a quote, a backslash, a
 * control character, `<`, `>`, `&`, U+2028 or U+2029. Sticky: matched from `lastIndex` only.
 */
const PLAIN_RUN = /[^"\\\u0000-\u001f<>&\u2028\u2029]+/y

/**
 * Go's `json.Compact` with HTML escaping, as `json.Marshal` applies it to a `json.RawMessage`. Throws
 * `ParleyError('INVALID_JSON')` for anything Go's decoder would refuse (trailing commas, comments, NaN, leading
 * zeros, control characters in strings, bad escapes, nesting beyond `maxDepth`, trailing garbage).
 *
 * One flat loop over the characters with all state in locals: request bodies run to megabytes, and this shape is
 * what V8 compiles well.
 */
export function compactJson(text: string, maxDepth = GO_MAX_DEPTH): string {
  const src = toWellFormed(text)
  const n = src.length
  const stack = new Uint8Array(Math.max(1, Math.min(maxDepth, n)))
  let depth = 0
  let state = VALUE
  let i = 0
  // Output goes to a UTF-16 buffer, allocated only once something differs from the source: an already-compact text
  // comes back as the same string. Output never outruns input by more than 5 per HTML escape, so the buffer only
  // needs growing there.
  let buf: Uint16Array | undefined
  let w = 0
  let copyFrom = 0
  let escapes = 0

  // Past the end reads -1, not NaN, so the character code stays a small integer (NaN would turn every comparison
  // on it into a floating-point one).
  const at = (k: number): number => (k < n ? src.charCodeAt(k) : -1)
  const fail = (pos: number, context: string): never => {
    const c = at(pos)
    throw syntaxError(src, pos, c < 0 ? 'unexpected end of JSON input' : `invalid ${describe(c)} ${context}`)
  }

  for (;;) {
    let c = at(i)
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
      if (buf === undefined) buf = new Uint16Array(n)
      while (copyFrom < i) buf[w++] = at(copyFrom++)
      do c = at(++i)
      while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09)
      copyFrom = i
    }
    if (state === AFTER) {
      if (depth === 0) {
        if (i < n) fail(i, 'after top-level value')
        break
      }
      const top = stack[depth - 1]
      if (c === 0x2c) {
        i++
        state = top === OBJECT ? KEY : VALUE
      } else if ((top === OBJECT && c === 0x7d) || (top === ARRAY && c === 0x5d)) {
        i++
        depth--
      } else fail(i, top === OBJECT ? 'after object key:value pair' : 'after array element')
      continue
    }
    if (state === COLON) {
      if (c !== 0x3a) fail(i, 'after object key')
      i++
      state = VALUE
      continue
    }
    if (state === KEY || state === KEY_OR_CLOSE) {
      if (c === 0x7d && state === KEY_OR_CLOSE) {
        i++
        depth--
        state = AFTER
        continue
      }
      if (c !== 0x22) fail(i, 'looking for beginning of object key string')
      state = COLON
    } else if (c === 0x5d && state === VALUE_OR_CLOSE) {
      i++
      depth--
      state = AFTER
      continue
    } else {
      state = AFTER
      if (c === 0x7b || c === 0x5b) {
        if (depth >= maxDepth) throw syntaxError(src, i, `exceeded max depth of ${maxDepth} nested objects/arrays`)
        stack[depth++] = c === 0x7b ? OBJECT : ARRAY
        state = c === 0x7b ? KEY_OR_CLOSE : VALUE_OR_CLOSE
        i++
        continue
      }
      if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
        if (c === 0x2d) c = at(++i)
        if (c === 0x30) c = at(++i)
        else if (c >= 0x31 && c <= 0x39) {
          do c = at(++i)
          while (c >= 0x30 && c <= 0x39)
        } else fail(i, 'in numeric literal')
        if (c === 0x2e) {
          c = at(++i)
          if (!(c >= 0x30 && c <= 0x39)) fail(i, 'after decimal point in numeric literal')
          do c = at(++i)
          while (c >= 0x30 && c <= 0x39)
        }
        if (c === 0x65 || c === 0x45) {
          c = at(++i)
          if (c === 0x2b || c === 0x2d) c = at(++i)
          if (!(c >= 0x30 && c <= 0x39)) fail(i, 'in exponent of numeric literal')
          do c = at(++i)
          while (c >= 0x30 && c <= 0x39)
        }
        continue
      }
      const word = c === 0x74 ? 'true' : c === 0x66 ? 'false' : c === 0x6e ? 'null' : undefined
      if (word !== undefined) {
        for (let k = 1; k < word.length; k++) {
          if (at(i + k) !== word.charCodeAt(k)) fail(i + k, `in literal ${word} (expecting '${word[k]}')`)
        }
        i += word.length
        continue
      }
      if (c !== 0x22) fail(i, 'looking for beginning of value')
    }

    // A string (value or key) opens at i.
    for (i++; ; i++) {
      // Runs of characters that need nothing are skipped by the regex engine, far faster than one at a time here.
      PLAIN_RUN.lastIndex = i
      if (PLAIN_RUN.test(src)) i = PLAIN_RUN.lastIndex
      c = at(i)
      if (c === 0x22) break
      if (c === 0x5c) {
        c = at(++i)
        if (c === 0x75) {
          for (let k = i + 1; k < i + 5; k++) if (!isHex(at(k))) fail(k, 'in \\u hexadecimal character escape')
          i += 4
        } else if (!SHORT_ESCAPES.has(c)) fail(i, 'in string escape code')
      } else if (c < 0x20 || i >= n) fail(i, 'in string literal')
      else if (isHtmlUnsafe(c)) {
        // The whole run of them at once: a value of nothing else (megabytes of `<`) would otherwise cost a regex
        // call per character, seconds for a body within the limits.
        let end = i + 1
        while (isHtmlUnsafe(at(end))) end++
        escapes += end - i
        if (buf === undefined || buf.length < n + 5 * escapes) {
          const grown = new Uint16Array(n + 5 * escapes * 2)
          if (buf !== undefined) grown.set(buf.subarray(0, w))
          buf = grown
        }
        while (copyFrom < i) buf[w++] = at(copyFrom++)
        // `\u` and four lowercase hex digits, as Go writes them (HTML_ESCAPES).
        for (; i < end; i++) {
          const u = at(i)
          buf[w++] = 0x5c
          buf[w++] = 0x75
          buf[w++] = HEX_DIGITS[(u >> 12) & 15]!
          buf[w++] = HEX_DIGITS[(u >> 8) & 15]!
          buf[w++] = HEX_DIGITS[(u >> 4) & 15]!
          buf[w++] = HEX_DIGITS[u & 15]!
        }
        copyFrom = end
        // The loop's step moves past the run's last character.
        i = end - 1
      }
    }
    i++
  }

  if (buf === undefined) return src
  while (copyFrom < n) buf[w++] = at(copyFrom++)
  return utf16ToString(buf, w)
}

/** A string goJsonString writes as it is: no quote, backslash, control character, HTML-unsafe character or surrogate. */
const NOTHING_TO_ESCAPE = /^[^"\\\u0000-\u001f<>&\u2028\u2029\ud800-\udfff]*$/

/** Go's `json.Marshal(string)` (Go ≥ 1.22: `\b` and `\f` get short escapes; earlier releases wrote `\u0008`/`\u000c`). */
export function goJsonString(s: string): string {
  // Most strings (ids, names, keys, timestamps) need no escape at all: one scan says so.
  if (NOTHING_TO_ESCAPE.test(s)) return `"${s}"`
  const src = toWellFormed(s)
  let out = '"'
  let from = 0
  for (let i = 0; i < src.length; i++) {
    PLAIN_RUN.lastIndex = i
    if (PLAIN_RUN.test(src)) i = PLAIN_RUN.lastIndex
    if (i >= src.length) break
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

  /** Under `clientJson`, a placeholder swapped for the text afterwards; elsewhere the parsed value. */
  toJSON(): unknown {
    if (rawSlots) return `\u0000${SLOT_TOKEN}:${rawSlots.push(this.raw) - 1}\u0000`
    return JSON.parse(this.raw) as unknown
  }
}

/** The RawJson texts met by the `JSON.stringify` of a `clientJson` call in progress. */
let rawSlots: string[] | undefined
/** Unguessable, so that no string a client sent can pass for a placeholder. */
const SLOT_TOKEN = randomBytes(9).toString('base64url')
const RAW_SLOT = new RegExp(`"\\\\u0000${SLOT_TOKEN}:(\\d+)\\\\u0000"`, 'g')
const HTML_UNSAFE = /[<>&\u2028\u2029]/
const HTML_UNSAFE_ALL = /[<>&\u2028\u2029]/g

/**
 * JSON text of a value for clients that parse it (event frames), written by the engine's `JSON.stringify` with Go's
 * HTML escapes and RawJson texts kept exact: the same value `goJson` writes, several times faster. Not byte-identical
 * to Go in rare escapes (`\b`, `\f`, lone surrogates), so never for anything hashed or compared as text.
 */
export function clientJson(value: unknown): string {
  const outer = rawSlots
  const slots: string[] = []
  rawSlots = slots
  let text: string
  try {
    text = JSON.stringify(value)
  } finally {
    rawSlots = outer
  }
  // Escaped before the raw texts go in: they are written as they are, as goJson writes them.
  if (HTML_UNSAFE.test(text)) text = text.replace(HTML_UNSAFE_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
  return slots.length > 0 ? text.replace(RAW_SLOT, (_m, i: string) => slots[Number(i)]!) : text
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

  /** Its fields in order, for `JSON.stringify` (`clientJson`). */
  toJSON(): Record<string, unknown> {
    return Object.fromEntries(this.fields)
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
 *
 * Written by string concatenation, each object's keys read with `Object.keys`: a page of 1,000 events takes 2.8 ms
 * (`JSON.stringify` 1.7 ms), where parts pushed to an array by closures over `Object.entries` pairs and joined once
 * take 7 ms for the same output.
 */
export function goJson(value: unknown): string {
  return goJsonValue(value, 0)
}

function goJsonValue(v: unknown, depth: number): string {
  // Our shapes are a few levels deep; a deep one is a cycle or a mistake, better named than a stack overflow.
  if (depth > 1000) throw new ParleyError('INTERNAL', 'value nests too deeply to encode as JSON (a cycle?)')
  switch (typeof v) {
    case 'string':
      return goJsonString(v)
    case 'number':
      return goNumber(v)
    case 'bigint':
      return v.toString()
    case 'boolean':
      return v ? 'true' : 'false'
    case 'object': {
      if (v === null) return 'null'
      if (v instanceof RawJson) return v.raw
      if (v instanceof GoStruct) {
        let out = '{'
        for (const [key, field] of v.fields) {
          if (field === undefined) continue
          out += (out.length > 1 ? ',' : '') + goJsonString(key) + ':' + goJsonValue(field, depth + 1)
        }
        return out + '}'
      }
      if (Array.isArray(v)) {
        let out = '['
        for (let k = 0; k < v.length; k++) out += (k > 0 ? ',' : '') + goJsonValue(v[k], depth + 1)
        return out + ']'
      }
      if (!isPlainObject(v)) break
      const o = v as Record<string, unknown>
      const keys = Object.keys(o)
      let out = '{'
      for (let k = 0; k < keys.length; k++) {
        const field = o[keys[k]!]
        if (field === undefined) continue
        out += (out.length > 1 ? ',' : '') + goJsonString(keys[k]!) + ':' + goJsonValue(field, depth + 1)
      }
      return out + '}'
    }
  }
  throw new ParleyError('INTERNAL', `cannot encode ${v === undefined ? 'undefined' : v !== null && typeof v === 'object' ? (v.constructor?.name ?? 'object') : typeof v} as JSON`)
}
