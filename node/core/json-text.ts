/**
 * Reading valid, compact JSON text (what `compactJson` returns) by position, for the node tree in json.ts: where a
 * string, a scalar or a container ends, what a string or a member's key says, and an index of where the larger
 * containers end. Passing over items allocates nothing (but the decoding of an escaped key): reading past what is
 * not wanted costs time only.
 */

/**
 * Containers shorter than this are not indexed: their end is found by scanning them (at most this many characters),
 * so a flood of tiny containers (`[{},{},…]`) costs the index nothing.
 */
export const MIN_INDEXED_CHARS = 64

/**
 * Index just past the closing quote of the string starting at `from`: the first quote not escaped by an odd run of
 * backslashes (the text is valid, so one exists).
 */
export function stringEnd(s: string, from: number): number {
  for (let q = s.indexOf('"', from + 1); ; q = s.indexOf('"', q + 1)) {
    let b = q - 1
    while (s.charCodeAt(b) === 0x5c) b--
    if ((q - 1 - b) % 2 === 0) return q + 1
  }
}

/** Index just past the container starting at `from`, found by matching brackets: costs the container's length. */
export function scanEnd(s: string, from: number): number {
  let depth = 0
  for (let i = from; ; i++) {
    const c = s.charCodeAt(i)
    if (c === 0x22) i = stringEnd(s, i) - 1
    else if (c === 0x7b || c === 0x5b) depth++
    else if (c === 0x7d || c === 0x5d) {
      if (--depth === 0) return i + 1
    }
  }
}

/** Index just past the string, literal or number starting at `i`. */
export function scalarEnd(s: string, i: number): number {
  const c = s.charCodeAt(i)
  if (c === 0x22) return stringEnd(s, i)
  if (c === 0x74 || c === 0x6e) return i + 4 // true, null
  if (c === 0x66) return i + 5 // false
  // A validated number runs to the next `,` `]` `}` or the end.
  let k = i + 1
  for (; k < s.length; k++) {
    const d = s.charCodeAt(k)
    if (d === 0x2c || d === 0x5d || d === 0x7d) break
  }
  return k
}

/** Whether the string body s[from, to) holds an escape, so that its text is not what it says. */
function hasEscape(s: string, from: number, to: number): boolean {
  for (let k = from; k < to; k++) if (s.charCodeAt(k) === 0x5c) return true
  return false
}

/**
 * Which of `names` the key whose string body is s[from, to) decodes to, or -1; tried from `hint` on (the name after
 * the last one found: members mostly come in the order they are asked for). Compared in place, a character at a
 * time; only a key that matches no name so and holds an escape is decoded to compare.
 */
export function keyIndex(s: string, from: number, to: number, names: readonly string[], hint: number): number {
  const n = names.length
  for (let t = 0, j = hint; t < n; t++, j = j + 1 < n ? j + 1 : 0) if (keyIs(s, from, to, names[j]!)) return j
  return hasEscape(s, from, to) ? names.indexOf(decodeString(s.slice(from, to))) : -1
}

/** Whether the key body s[from, to) is `name` as it stands: no escape in it, the same characters. */
function keyIs(s: string, from: number, to: number, name: string): boolean {
  if (name.length !== to - from) return false
  for (let k = 0; k < name.length; k++) {
    const c = s.charCodeAt(from + k)
    if (c !== name.charCodeAt(k) || c === 0x5c) return false
  }
  return true
}

const SHORT_UNESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
}

/** The string a Go decoder would produce: a `\u` surrogate escape without its pair becomes U+FFFD, like Go's. */
export function decodeString(body: string): string {
  let k = body.indexOf('\\')
  if (k === -1) return body
  let out = ''
  let from = 0
  for (; k !== -1; k = body.indexOf('\\', from)) {
    out += body.slice(from, k)
    const e = body.charAt(k + 1)
    if (e !== 'u') {
      out += SHORT_UNESCAPES[e] ?? ''
      from = k + 2
      continue
    }
    const cu = parseInt(body.slice(k + 2, k + 6), 16)
    from = k + 6
    if (cu < 0xd800 || cu > 0xdfff) out += String.fromCharCode(cu)
    else if (cu <= 0xdbff && body.startsWith('\\u', from) && /^[dD][c-fC-F]/.test(body.slice(from + 2, from + 4))) {
      out += String.fromCharCode(cu, parseInt(body.slice(from + 2, from + 6), 16))
      from += 6
    } else out += '\uFFFD'
  }
  return out + body.slice(from)
}

/**
 * Where the containers of s[from, to) end, found in one pass: `opens` holds their starts in increasing order,
 * `closes` the index just past each one's closing bracket. Children are then found by jumping over nested
 * containers, so a node's children cost what they are in number, not in size, and are built only when asked for: a
 * 16 MiB request body is mostly data values that are forwarded by their raw text and never walked.
 *
 * Only what a reader may need is recorded, so that the index costs a bounded share of the text whatever its shape:
 * containers at most `depth` levels below the one at `from` (the document's root when `from` is 0; deeper ones are
 * indexed when a reader first walks below that level, see json.ts), and of those only the ones of at least
 * MIN_INDEXED_CHARS (shorter ones are scanned when asked for).
 */
export class ContainerIndex {
  private readonly opens: Int32Array
  private readonly closes: Int32Array
  private readonly count: number
  /** Just past the entry last found: where endOf looks first. */
  private last = 0

  constructor(
    s: string,
    from: number,
    to: number,
    /** How many levels below the first container are recorded (0: that one only). */
    readonly depth: number,
  ) {
    let opens: Int32Array = new Int32Array(16)
    let closes: Int32Array = new Int32Array(16)
    let count = 0
    // The entries of the recorded containers open at this point, innermost last.
    const stack: number[] = []
    let level = 0
    for (let i = from; i < to; i++) {
      const c = s.charCodeAt(i)
      if (c === 0x22) i = stringEnd(s, i) - 1
      else if (c === 0x7b || c === 0x5b) {
        if (level++ > depth) continue
        if (count === opens.length) {
          opens = grow(opens)
          closes = grow(closes)
        }
        opens[count] = i
        stack.push(count++)
      } else if (c === 0x7d || c === 0x5d) {
        if (--level > depth) continue
        const e = stack.pop()!
        // A short container holds only shorter ones, dropped already as they closed: its entry is the last one.
        if (i + 1 - opens[e]! < MIN_INDEXED_CHARS) count = e
        else closes[e] = i + 1
      }
    }
    this.opens = opens
    this.closes = closes
    this.count = count
  }

  /** The index just past the container that starts at `start`, or -1 when it was not recorded. */
  endOf(start: number): number {
    // Readers walk forward, depth first: the entry asked for, if recorded, is mostly one of the next few after the
    // last one found, and a container that was not (a short one) falls between two of those.
    let k = this.last
    if (k === 0 || this.opens[k - 1]! < start) {
      for (const near = Math.min(k + 4, this.count); k < near; k++) {
        const o = this.opens[k]!
        if (o > start) return -1
        if (o === start) {
          this.last = k + 1
          return this.closes[k]!
        }
      }
      if (k === this.count) return -1
    }
    let lo = 0
    let hi = this.count - 1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      const o = this.opens[mid]!
      if (o === start) {
        this.last = mid + 1
        return this.closes[mid]!
      }
      if (o < start) lo = mid + 1
      else hi = mid - 1
    }
    return -1
  }
}

function grow(a: Int32Array): Int32Array {
  const b = new Int32Array(a.length * 2)
  b.set(a)
  return b
}
