/**
 * JSON as FireFly's Go code sees it. A member hashes the text it received (Go-compacted), never a re-serialised
 * object: `JSON.stringify(JSON.parse(x))` reorders integer-like keys, rewrites `1.0` and `1e3`, rounds big integers
 * and skips Go's HTML escaping, and any of those changes a hash.
 *
 * `parseJsonRaw` validates with Go's rules and returns a tree whose every node carries `raw` — its own text as Go's
 * `json.Marshal(json.RawMessage)` would write it — beside a convenience JS `value`.
 */
import { compactJson, GO_MAX_DEPTH } from './go-json.js'

export { clientJson, compactJson, goJson, goJsonString, goStruct, GoStruct, RawJson, GO_MAX_DEPTH, type GoJsonValue } from './go-json.js'

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

/**
 * Where every object and array of a compact text ends, found in one pass: `opens` holds their starts in increasing
 * order, `closes` the index just past each one's closing bracket. Children are then found by jumping over nested
 * containers, so a node's children cost what they are in number, not in size, and are built only when asked for: a
 * 16 MiB request body is mostly data values that are forwarded by their raw text and never walked.
 */
class ContainerIndex {
  private readonly opens: Int32Array
  private readonly closes: Int32Array
  private readonly count: number

  constructor(s: string) {
    let opens: Int32Array = new Int32Array(64)
    let closes: Int32Array = new Int32Array(64)
    let count = 0
    const stack: number[] = []
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i)
      if (c === 0x22) i = stringEnd(s, i) - 1
      else if (c === 0x7b || c === 0x5b) {
        if (count === opens.length) {
          opens = grow(opens)
          closes = grow(closes)
        }
        opens[count] = i
        stack.push(count++)
      } else if (c === 0x7d || c === 0x5d) closes[stack.pop()!] = i + 1
    }
    this.opens = opens
    this.closes = closes
    this.count = count
  }

  /** The index just past the container that starts at `start`. */
  endOf(start: number): number {
    let lo = 0
    let hi = this.count - 1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      const o = this.opens[mid]!
      if (o === start) return this.closes[mid]!
      if (o < start) lo = mid + 1
      else hi = mid - 1
    }
    throw new Error(`no container starts at offset ${start}`)
  }
}

function grow(a: Int32Array): Int32Array {
  const b = new Int32Array(a.length * 2)
  b.set(a)
  return b
}

/**
 * Index just past the closing quote of the string starting at `from`: the first quote not escaped by an odd run of
 * backslashes (the text is valid, so one exists).
 */
function stringEnd(s: string, from: number): number {
  for (let q = s.indexOf('"', from + 1); ; q = s.indexOf('"', q + 1)) {
    let b = q - 1
    while (s.charCodeAt(b) === 0x5c) b--
    if ((q - 1 - b) % 2 === 0) return q + 1
  }
}

// Internal to this module: callers see the `JsonNode` union. `value` is built on first use, since a large data value
// is mostly forwarded and hashed by its raw text and walked only near the top; so are a container's children.
class Node implements JsonNodeCommon {
  /** @internal */ cached: JsonValue | undefined = undefined
  /** @internal */ done = false
  private children: JsonMember[] | JsonNode[] | undefined
  // Built on first lookup and only for larger objects: most nodes are never asked, and a short scan is cheaper.
  private byKey?: Map<string, JsonNode>

  constructor(
    readonly kind: JsonKind,
    /** @internal The compacted text of the whole parse, shared by all its nodes; `raw` slices it without copying. */
    readonly text: string,
    /** @internal */ readonly start: number,
    /** @internal */ readonly end: number,
    /** @internal Where the containers of `text` end; shared by all the nodes of one parse. */
    private readonly index: ContainerIndex,
  ) {}

  get raw(): string {
    return this.text.slice(this.start, this.end)
  }

  get value(): JsonValue {
    return this.done ? (this.cached as JsonValue) : materialise(this)
  }

  get members(): readonly JsonMember[] {
    if (this.kind !== 'object') return NO_MEMBERS
    this.children ??= this.readChildren()
    return this.children as JsonMember[]
  }

  get items(): readonly JsonNode[] {
    if (this.kind !== 'array') return NO_ITEMS
    this.children ??= this.readChildren()
    return this.children as JsonNode[]
  }

  get(key: string): JsonNode | undefined {
    const members = this.members
    if (members.length <= 16) {
      for (let k = members.length - 1; k >= 0; k--) if (members[k]!.key === key) return members[k]!.node
      return undefined
    }
    if (this.byKey === undefined) {
      this.byKey = new Map()
      for (const m of members) this.byKey.set(m.key, m.node) // later duplicates overwrite: last wins
    }
    return this.byKey.get(key)
  }

  has(key: string): boolean {
    return this.get(key) !== undefined
  }

  /** This container's members or items, in order, read from the compact text between its brackets. */
  private readChildren(): JsonMember[] | JsonNode[] {
    const s = this.text
    const last = this.end - 1
    const object = this.kind === 'object'
    const members: JsonMember[] = []
    const items: JsonNode[] = []
    for (let i = this.start + 1; i < last; i++) {
      let key = ''
      if (object) {
        const keyEnd = stringEnd(s, i)
        key = decodeString(s.slice(i + 1, keyEnd - 1))
        i = keyEnd + 1 // past the colon
      }
      const node = nodeAt(s, i, this.index)
      i = node.end // at the comma or the closer
      if (object) members.push({ key, node: node as JsonNode })
      else items.push(node as JsonNode)
    }
    return object ? members : items
  }
}

/** The node of the value that starts at `i` in compact text `s` (children built later, when asked for). */
function nodeAt(s: string, i: number, index: ContainerIndex): Node {
  const c = s.charCodeAt(i)
  if (c === 0x7b) return new Node('object', s, i, index.endOf(i), index)
  if (c === 0x5b) return new Node('array', s, i, index.endOf(i), index)
  if (c === 0x22) return new Node('string', s, i, stringEnd(s, i), index)
  if (c === 0x74) return new Node('boolean', s, i, i + 4, index)
  if (c === 0x66) return new Node('boolean', s, i, i + 5, index)
  if (c === 0x6e) return new Node('null', s, i, i + 4, index)
  // A validated number runs to the next `,` `]` `}` or the end.
  let k = i + 1
  for (; k < s.length; k++) {
    const d = s.charCodeAt(k)
    if (d === 0x2c || d === 0x5d || d === 0x7d) break
  }
  return new Node('number', s, i, k, index)
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

function scalarValue(n: Node): JsonValue {
  switch (n.kind) {
    case 'string':
      return decodeString(n.text.slice(n.start + 1, n.end - 1))
    case 'number':
      return Number(n.text.slice(n.start, n.end))
    case 'boolean':
      return n.text.charCodeAt(n.start) === 0x74
    default:
      return null
  }
}

/** Builds the JS value of a subtree bottom-up with an explicit stack: documents nest up to 10000 deep. */
function materialise(root: Node): JsonValue {
  const stack: Node[] = [root]
  while (stack.length > 0) {
    const n = stack[stack.length - 1]!
    if (n.done) {
      stack.pop()
      continue
    }
    const children = (n.kind === 'object' ? n.members.map((m) => m.node) : n.items) as readonly Node[]
    let pending = false
    for (const c of children) {
      if (!c.done) {
        stack.push(c)
        pending = true
      }
    }
    if (pending) continue
    if (n.kind === 'object') {
      const obj: { [key: string]: JsonValue } = {}
      for (const m of n.members) {
        const v = (m.node as Node).cached as JsonValue
        // Plain assignment of "__proto__" would replace the prototype instead of adding a member (JSON.parse adds one).
        if (m.key === '__proto__') Object.defineProperty(obj, m.key, { value: v, writable: true, enumerable: true, configurable: true })
        else obj[m.key] = v
      }
      n.cached = obj
    } else if (n.kind === 'array') n.cached = n.items.map((c) => (c as Node).cached as JsonValue)
    else n.cached = scalarValue(n)
    n.done = true
    stack.pop()
  }
  return root.cached as JsonValue
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
  const compact = compactJson(text, options.maxDepth ?? GO_MAX_DEPTH)
  return nodeAt(compact, 0, new ContainerIndex(compact)) as JsonNode
}

/**
 * Whether JSON text nests objects and arrays deeper than `max`, scanned without recursion or copies (the text is
 * assumed well formed: it was parsed when it arrived).
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true
    } else if (c === 0x7d || c === 0x5d) depth--
  }
  return false
}
