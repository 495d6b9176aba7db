/**
 * JSON as FireFly's Go code sees it. A member hashes the text it received (Go-compacted), never a re-serialised
 * object: `JSON.stringify(JSON.parse(x))` reorders integer-like keys, rewrites `1.0` and `1e3`, rounds big integers
 * and skips Go's HTML escaping, and any of those changes a hash.
 *
 * `parseJsonRaw` validates with Go's rules and returns a tree whose every node carries `raw` — its own text as Go's
 * `json.Marshal(json.RawMessage)` would write it — beside a convenience JS `value`.
 *
 * A reader pays for what it reads, not for what the text holds (peers and clients send up to 64 MiB, and a node per
 * tiny item costs fifty times its text): `get` and `pick` pass over the members they do not want without building
 * them, `count` and `eachItem` let a reader bound an array before building its items, and only `items`, `members`
 * and `value` build everything below a node.
 */
import { compactJson, GO_MAX_DEPTH } from './go-json.js'
import { ContainerIndex, decodeString, keyIndex, MIN_INDEXED_CHARS, scalarEnd, scanEnd, stringEnd } from './json-text.js'

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
  /** Array items in order; empty otherwise. Builds (and keeps) a node for every item: see count and eachItem. */
  readonly items: readonly JsonNode[]
  /**
   * An object member's node; with duplicate keys the last one, as Go's decoder keeps. Undefined for non-objects.
   * Unless `members` was read, each call scans the object's members without building any but the one found.
   */
  get(key: string): JsonNode | undefined
  has(key: string): boolean
  /**
   * The members named `names`, in that order (undefined for those absent, and for all of a non-object; the last of a
   * repeated key), found in one scan that builds none of the others. An array rather than a record: a record's keyed
   * writes cost a batch reader more than the scan (it picks from every object of a batch).
   */
  pick<const K extends readonly string[]>(names: K): Picked<K>
  /**
   * How many items or members a container holds (0 for other kinds), counted without building their nodes; counting
   * stops past `atMost`, answering `atMost + 1`, so that a reader refuses an overlong array at the cost of its limit.
   */
  count(atMost?: number): number
  /**
   * Visits an array's items in order (nothing for other kinds), building each one's node as it comes and keeping
   * none: a visitor that throws on a bad item stops there, at the cost of the items before it. Answers how many there
   * were; with more than `atMost`, it stops before building the next one and answers `atMost + 1`.
   */
  eachItem(visit: (item: JsonNode, index: number) => void, atMost?: number): number
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

/** What JsonNode.pick answers for the names `K`: a node or undefined for each, in order. */
export type Picked<K extends readonly string[]> = { -readonly [I in keyof K]: JsonNode | undefined }

const NO_MEMBERS: readonly JsonMember[] = Object.freeze([])
const NO_ITEMS: readonly JsonNode[] = Object.freeze([])

/**
 * How many levels below the root a parse indexes unless told otherwise (ParseJsonOptions.indexDepth): request bodies
 * and definition values are read no deeper (a message's data values sit at the third level and are kept as text).
 */
const DEFAULT_INDEX_DEPTH = 3

/** Nodes built since the process started: lets tests check that reading a tree costs what it reads, not its size. */
let nodesBuilt = 0
export function jsonNodesBuilt(): number {
  return nodesBuilt
}

/** What Node.find answers, reused: it runs for every object a reader picks from, and garbage costs there. */
const FOUND: number[] = []

// Internal to this module: callers see the `JsonNode` union. `value` is built on first use, since a large data value
// is mostly forwarded and hashed by its raw text and walked only near the top; so are a container's children.
class Node implements JsonNodeCommon {
  /** @internal */ cached: JsonValue | undefined = undefined
  /** @internal */ done = false
  private children: JsonMember[] | JsonNode[] | undefined
  // Built on first lookup and only for larger objects whose members were listed: a short scan is cheaper.
  private byKey?: Map<string, JsonNode>

  constructor(
    readonly kind: JsonKind,
    /** @internal The compacted text of the whole parse, shared by all its nodes; `raw` slices it without copying. */
    readonly text: string,
    /** @internal */ readonly start: number,
    /** @internal */ readonly end: number,
    /**
     * @internal Where this container's child containers end: an index that holds this container at `level` (its
     * children are in it while `level` is under the index's depth), or undefined for a container found by scanning.
     * A container whose children its index does not hold indexes itself when first walked below (childEnd).
     */
    private index: ContainerIndex | undefined,
    /** @internal */ private level: number,
  ) {
    nodesBuilt++
  }

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
    if (this.kind !== 'object') return undefined
    if (this.children === undefined) {
      // Found by one scan that builds no member it passes: an object of a million tiny members costs no memory.
      const at = this.find([key])
      return at[0]! < 0 ? undefined : (this.child(at[0]!, at[1]) as JsonNode)
    }
    const members = this.children as JsonMember[]
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

  pick<const K extends readonly string[]>(names: K): Picked<K> {
    const out: (JsonNode | undefined)[] = []
    const at = this.kind === 'object' && this.children === undefined ? this.find(names) : undefined
    for (let j = 0; j < names.length; j++) {
      if (at === undefined) out.push(this.get(names[j]!))
      else out.push(at[2 * j]! < 0 ? undefined : (this.child(at[2 * j]!, at[2 * j + 1]) as JsonNode))
    }
    return out as unknown as Picked<K>
  }

  count(atMost = Number.MAX_SAFE_INTEGER): number {
    if (this.kind !== 'object' && this.kind !== 'array') return 0
    if (this.children !== undefined) return Math.min(this.children.length, atMost + 1)
    const s = this.text
    const last = this.end - 1
    const object = this.kind === 'object'
    let n = 0
    for (let i = this.start + 1; i < last && n <= atMost; i++) {
      if (object) i = stringEnd(s, i) + 1 // past the key and its colon
      i = this.valueEnd(i) // at the comma or the closer
      n++
    }
    return n
  }

  eachItem(visit: (item: JsonNode, index: number) => void, atMost = Number.MAX_SAFE_INTEGER): number {
    if (this.kind !== 'array') return 0
    if (this.children !== undefined) {
      const items = this.children as JsonNode[]
      for (let k = 0; k < items.length; k++) {
        if (k === atMost) return atMost + 1
        visit(items[k]!, k)
      }
      return items.length
    }
    const last = this.end - 1
    let k = 0
    for (let i = this.start + 1; i < last; i++) {
      if (k === atMost) return atMost + 1 // before building the item past the bound
      const node = this.child(i)
      visit(node as JsonNode, k++)
      i = node.end
    }
    return k
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
      const node = this.child(i)
      i = node.end // at the comma or the closer
      if (object) members.push({ key, node: node as JsonNode })
      else items.push(node as JsonNode)
    }
    return object ? members : items
  }

  /**
   * Where the values of the members named `names` start and end (pairs, -1 for those absent), the last of a repeated
   * key as Go's decoder keeps, in one pass over this object's text that builds nothing for the members it passes.
   * The answer is FOUND, valid until the next call (callers read it before building anything).
   */
  private find(names: readonly string[]): number[] {
    const at = FOUND
    for (let j = 0; j < 2 * names.length; j++) at[j] = -1
    const s = this.text
    const last = this.end - 1
    let hint = 0
    for (let i = this.start + 1; i < last; i++) {
      const keyEnd = stringEnd(s, i)
      const j = keyIndex(s, i + 1, keyEnd - 1, names, hint)
      const start = keyEnd + 1 // past the colon
      i = this.valueEnd(start) // at the comma or the closer
      if (j >= 0) {
        at[2 * j] = start
        at[2 * j + 1] = i
        hint = j + 1 < names.length ? j + 1 : 0
      }
    }
    return at
  }

  /** The node of the child value that starts at `i` in this container's text (and ends at `end`, when known). */
  private child(i: number, end = this.valueEnd(i)): Node {
    const s = this.text
    const c = s.charCodeAt(i)
    if (c !== 0x7b && c !== 0x5b) return new Node(scalarKind(c), s, i, end, undefined, 0)
    // After valueEnd, which may have indexed this container.
    const indexed = this.index !== undefined && this.level < this.index.depth
    return new Node(c === 0x7b ? 'object' : 'array', s, i, end, indexed ? this.index : undefined, this.level + 1)
  }

  /** Index just past the child value that starts at `i`, without building its node. */
  private valueEnd(i: number): number {
    const c = this.text.charCodeAt(i)
    return c === 0x7b || c === 0x5b ? this.childEnd(i) : scalarEnd(this.text, i)
  }

  /** Index just past the child container that starts at `i`: from the index when it holds it, else by scanning it. */
  private childEnd(i: number): number {
    if (this.index === undefined || this.level >= this.index.depth) {
      // Below what its parse indexed: a short container's children are shorter, scanned at small cost; a larger one
      // is indexed now, all levels at once, so that walking down through it stays linear.
      if (this.end - this.start < MIN_INDEXED_CHARS) return scanEnd(this.text, i)
      this.index = new ContainerIndex(this.text, this.start, this.end, Number.POSITIVE_INFINITY)
      this.level = 0
    }
    const end = this.index.endOf(i)
    return end >= 0 ? end : scanEnd(this.text, i)
  }
}

/** The kind of the scalar whose first character is `c` (a conditional: a lookup table of char codes is a slow sparse one). */
function scalarKind(c: number): JsonKind {
  return c === 0x22 ? 'string' : c === 0x74 || c === 0x66 ? 'boolean' : c === 0x6e ? 'null' : 'number'
}

/** The node of the document's root value, held by `index` at level 0. */
function rootNode(s: string, index: ContainerIndex): Node {
  const c = s.charCodeAt(0)
  if (c !== 0x7b && c !== 0x5b) return new Node(scalarKind(c), s, 0, scalarEnd(s, 0), undefined, 0)
  const end = index.endOf(0)
  return new Node(c === 0x7b ? 'object' : 'array', s, 0, end >= 0 ? end : scanEnd(s, 0), index, 0)
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
  /**
   * How many levels below the root are indexed up front (3 unless told); deeper ones are found by scanning and
   * indexed when first walked, so what no reader walks (data values, kept as text) costs no index.
   */
  indexDepth?: number
}

/**
 * Parses JSON with Go's acceptance rules into a tree whose nodes each carry `raw` (Go-compact text) and `value`.
 * Throws `ParleyError('INVALID_JSON')` naming the problem and its line/column. Linear in the input size.
 */
export function parseJsonRaw(text: string, options: ParseJsonOptions = {}): JsonNode {
  const compact = compactJson(text, options.maxDepth ?? GO_MAX_DEPTH)
  return rootNode(compact, new ContainerIndex(compact, 0, compact.length, options.indexDepth ?? DEFAULT_INDEX_DEPTH)) as JsonNode
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
