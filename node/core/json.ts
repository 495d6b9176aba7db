/**
 * JSON as FireFly's Go code sees it. A member hashes the text it received (Go-compacted), never a re-serialised
 * object: `JSON.stringify(JSON.parse(x))` reorders integer-like keys, rewrites `1.0` and `1e3`, rounds big integers
 * and skips Go's HTML escaping, and any of those changes a hash.
 *
 * `parseJsonRaw` validates with Go's rules and returns a tree whose every node carries `raw` — its own text as Go's
 * `json.Marshal(json.RawMessage)` would write it — beside a convenience JS `value`.
 */
import { compactJson, GO_MAX_DEPTH } from './go-json.js'

export { compactJson, goJson, goJsonString, goStruct, GoStruct, RawJson, GO_MAX_DEPTH, type GoJsonValue } from './go-json.js'

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

export interface JsonMember {
  readonly key: string
  readonly node: JsonNode
}

/** What every node offers, whatever its kind, so a request reader can walk a tree without a cast at each step. */
interface JsonNodeCommon {
  /** Go-compact text of this node: the bytes to hash and to forward. */
  readonly raw: string
  /** Object members in received order, duplicates included (Go keeps them in the raw text); empty otherwise. */
  readonly members: readonly JsonMember[]
  /** Array items in order; empty otherwise. */
  readonly items: readonly JsonNode[]
  /** An object member's node; with duplicate keys the last one, as Go's decoder keeps. Undefined for non-objects. */
  get(key: string): JsonNode | undefined
  has(key: string): boolean
}

/**
 * One value of a parsed document; `kind` narrows `value`. Numbers' `value` is the nearest double, so `raw` is what
 * counts for big or exact ones.
 */
export type JsonNode =
  | (JsonNodeCommon & { readonly kind: 'object'; readonly value: { [key: string]: JsonValue } })
  | (JsonNodeCommon & { readonly kind: 'array'; readonly value: JsonValue[] })
  | (JsonNodeCommon & { readonly kind: 'string'; readonly value: string })
  | (JsonNodeCommon & { readonly kind: 'number'; readonly value: number })
  | (JsonNodeCommon & { readonly kind: 'boolean'; readonly value: boolean })
  | (JsonNodeCommon & { readonly kind: 'null'; readonly value: null })

export type JsonKind = JsonNode['kind']

const NO_MEMBERS: readonly JsonMember[] = Object.freeze([])
const NO_ITEMS: readonly JsonNode[] = Object.freeze([])

class Node implements JsonNodeCommon {
  constructor(
    readonly kind: JsonKind,
    readonly value: JsonValue,
    /** The compacted text of the whole parse, shared by all its nodes; `raw` slices it (V8 slices without copying). */
    private readonly text: string,
    private readonly start: number,
    private readonly end: number,
    readonly members: readonly JsonMember[] = NO_MEMBERS,
    readonly items: readonly JsonNode[] = NO_ITEMS,
    private readonly byKey?: ReadonlyMap<string, JsonNode>,
  ) {}

  get raw(): string {
    return this.text.slice(this.start, this.end)
  }

  get(key: string): JsonNode | undefined {
    return this.byKey?.get(key)
  }

  has(key: string): boolean {
    return this.byKey?.has(key) ?? false
  }
}

// The one place where kind and value are paired; every caller passes a matching pair.
const makeNode = (
  kind: JsonKind,
  value: JsonValue,
  text: string,
  start: number,
  end: number,
  members?: readonly JsonMember[],
  items?: readonly JsonNode[],
  byKey?: ReadonlyMap<string, JsonNode>,
): JsonNode => new Node(kind, value, text, start, end, members, items, byKey) as JsonNode

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
function decodeString(body: string): string {
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

function setMember(obj: { [key: string]: JsonValue }, key: string, v: JsonValue): void {
  // Plain assignment of "__proto__" would replace the prototype instead of adding a member (JSON.parse adds one).
  if (key === '__proto__') Object.defineProperty(obj, key, { value: v, writable: true, enumerable: true, configurable: true })
  else obj[key] = v
}

type Frame =
  | { kind: 'object'; start: number; key: string; members: JsonMember[]; byKey: Map<string, JsonNode>; value: { [key: string]: JsonValue } }
  | { kind: 'array'; start: number; items: JsonNode[]; value: JsonValue[] }

const objectNode = (s: string, f: Extract<Frame, { kind: 'object' }>, end: number): JsonNode =>
  makeNode('object', f.value, s, f.start, end, f.members, NO_ITEMS, f.byKey)
const arrayNode = (s: string, f: Extract<Frame, { kind: 'array' }>, end: number): JsonNode =>
  makeNode('array', f.value, s, f.start, end, NO_MEMBERS, f.items)

const STRING_END = /["\\]/g
// Characters a validated number token can contain: - + . e E and digits.
const isNumberChar = (c: number): boolean => (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45

/** Builds the tree over text `compactJson` has already validated and stripped of whitespace, so no checks remain. */
function buildTree(s: string): JsonNode {
  let i = 0
  const stack: Frame[] = []

  const stringEnd = (from: number): number => {
    for (let k = from + 1; ; ) {
      STRING_END.lastIndex = k
      const m = STRING_END.exec(s)
      if (m === null) return s.length // unreachable: the text was validated
      if (s.charCodeAt(m.index) === 0x22) return m.index + 1
      k = m.index + 2
    }
  }
  const readKey = (): string => {
    const end = stringEnd(i)
    const key = decodeString(s.slice(i + 1, end - 1))
    i = end + 1 // past the colon
    return key
  }

  for (;;) {
    let node: JsonNode
    const c = s.charCodeAt(i)
    const start = i
    if (c === 0x7b) {
      i++
      const frame: Frame = { kind: 'object', start, key: '', members: [], byKey: new Map(), value: {} }
      if (s.charCodeAt(i) !== 0x7d) {
        frame.key = readKey()
        stack.push(frame)
        continue
      }
      node = objectNode(s, frame, ++i)
    } else if (c === 0x5b) {
      const frame: Frame = { kind: 'array', start, items: [], value: [] }
      if (s.charCodeAt(++i) !== 0x5d) {
        stack.push(frame)
        continue
      }
      node = arrayNode(s, frame, ++i)
    } else if (c === 0x22) {
      i = stringEnd(i)
      node = makeNode('string', decodeString(s.slice(start + 1, i - 1)), s, start, i)
    } else if (c === 0x74) node = makeNode('boolean', true, s, start, (i += 4))
    else if (c === 0x66) node = makeNode('boolean', false, s, start, (i += 5))
    else if (c === 0x6e) node = makeNode('null', null, s, start, (i += 4))
    else {
      while (isNumberChar(s.charCodeAt(++i)));
      node = makeNode('number', Number(s.slice(start, i)), s, start, i)
    }

    // Attach the finished node; close every container that ends right after it.
    for (;;) {
      const top = stack[stack.length - 1]
      if (top === undefined) return node
      if (top.kind === 'object') {
        top.members.push({ key: top.key, node })
        top.byKey.set(top.key, node)
        setMember(top.value, top.key, node.value)
      } else {
        top.items.push(node)
        top.value.push(node.value)
      }
      if (s.charCodeAt(i++) === 0x2c) {
        if (top.kind === 'object') top.key = readKey()
        break
      }
      stack.pop()
      node = top.kind === 'object' ? objectNode(s, top, i) : arrayNode(s, top, i)
    }
  }
}

export interface ParseJsonOptions {
  /** Nesting limit; defaults to Go's own (10000), so we accept exactly what a Go member accepts. */
  maxDepth?: number
}

/**
 * Parses JSON with Go's acceptance rules into a tree whose nodes each carry `raw` (Go-compact text) and `value`.
 * Throws `ParleyError('INVALID_JSON')` naming the problem and its line/column. Linear in the input size.
 */
export function parseJsonRaw(text: string, options: ParseJsonOptions = {}): JsonNode {
  return buildTree(compactJson(text, options.maxDepth ?? GO_MAX_DEPTH))
}
