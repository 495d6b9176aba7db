import fc from 'fast-check'
import { edgeNumberText, junkText } from './text.js'
import type { Seeds } from './seeds.js'

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }

/** Values a field should never take, whatever the field: wrong types, edges, prototype names, big and deep things. */
const hostileValue: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(null, true, false, 0, -1, 1.5, 1e308, -1e308, '', ' ', '__proto__', [], {}, [null], JSON.parse('{"__proto__":null}') as Json, { constructor: 'x' }),
  junkText,
  fc.integer({ min: 257, max: 20_000 }).map((n) => 'k'.repeat(n)),
  fc.integer({ min: 1, max: 120 }).map((n): Json => Array.from({ length: n }, (_, i) => `t${i}`)),
  fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>,
)

/** Where in a send body a mutation lands: every field the node reads, and some it should not. */
const BROADCAST_PATHS: string[][] = [
  ['header'],
  ['header', 'topics'],
  ['header', 'topics', '0'],
  ['header', 'topic'],
  ['header', 'tag'],
  ['header', 'txtype'],
  ['header', 'type'],
  ['header', 'author'],
  ['header', 'key'],
  ['header', 'cid'],
  ['header', 'id'],
  ['header', 'group'],
  ['header', 'namespace'],
  ['header', 'datahash'],
  ['header', 'created'],
  ['data'],
  ['data', '0'],
  ['data', '0', 'value'],
  ['data', '0', 'id'],
  ['data', '0', 'validator'],
  ['data', '0', 'datatype'],
  ['data', '0', 'datatype', 'name'],
  ['data', '0', 'datatype', 'version'],
  ['data', '0', 'hash'],
  ['data', '1'],
  ['group'],
  ['idempotencyKey'],
  ['hash'],
  ['state'],
  ['__proto__'],
  ['constructor'],
]

const DATA_PATHS: string[][] = [['value'], ['validator'], ['datatype'], ['datatype', 'name'], ['datatype', 'version'], ['id'], ['hash'], ['blob'], ['namespace'], ['__proto__']]
const DATATYPE_PATHS: string[][] = [['name'], ['version'], ['validator'], ['value'], ['value', 'type'], ['value', 'properties'], ['value', '$ref'], ['value', 'pattern'], ['id'], ['namespace'], ['__proto__']]

type Mutation = { path: string[]; op: 'set'; value: Json } | { path: string[]; op: 'delete' }

function mutationArb(paths: string[][], extraValues: fc.Arbitrary<Json>): fc.Arbitrary<Mutation> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...paths), fc.oneof(hostileValue, extraValues)).map(([path, value]): Mutation => ({ path, op: 'set', value })) },
    { weight: 1, arbitrary: fc.constantFrom(...paths).map((path): Mutation => ({ path, op: 'delete' })) },
  )
}

/**
 * Applies mutations, copying only the objects along each mutated path: generated values may share constants (and
 * deep ones a full clone would overflow the stack on). Keys are set as own properties, so `__proto__` becomes a key
 * like any other, as JSON text has it.
 */
function mutate(base: Json, mutations: Mutation[]): Json {
  let root = base
  for (const m of mutations) root = applyAt(root, m.path, m)
  return root
}

function applyAt(node: Json, path: string[], m: Mutation): Json {
  const [seg, ...rest] = path
  if (seg === undefined) return m.op === 'set' ? m.value : node
  const copy: Record<string, Json> | Json[] = Array.isArray(node) ? [...node] : node !== null && typeof node === 'object' ? { ...node } : {}
  if (rest.length === 0 && m.op === 'delete') {
    delete (copy as Record<string, Json>)[seg]
    return copy
  }
  const child = Object.hasOwn(copy, seg) ? (copy as Record<string, Json>)[seg]! : {}
  Object.defineProperty(copy, seg, { value: applyAt(child, rest, m), enumerable: true, writable: true, configurable: true })
  return copy
}

const topicArb = fc.oneof(fc.constantFrom('fuzz', 'fuzz-a', 'fuzz.b'), fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/))

/** A value a datatype check or a hash has to walk: plain JSON, or arrays nested deep. */
const dataValueArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<Json> },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 2_000 }).map((n) => nestArrays(n)) },
  { weight: 1, arbitrary: fc.constantFrom<Json>({ n: 1 }, { n: 'x' }, { n: 1.5 }, '<'.repeat(1000)) },
)

/**
 * Broadcast bodies one step from valid: a valid send (FireFly's MessageInOut), then none to three mutations that set
 * a field to something odd or delete it. The valid ones are sent for real (202s), so the bodies stay small.
 */
export function broadcastBodyArb(seeds: Seeds): fc.Arbitrary<Json> {
  const item = fc.oneof(
    dataValueArb.map((value): Json => ({ value })),
    fc.constantFrom<Json>({ id: seeds.dataId }, { id: seeds.blobDataId }, { value: { n: 1 }, datatype: seeds.datatype, validator: 'json' }),
  )
  const base = fc.record({
    header: fc.record({ topics: fc.array(topicArb, { minLength: 1, maxLength: 2 }).map((t) => [...new Set(t)]), tag: fc.option(topicArb, { nil: undefined }), txtype: fc.constantFrom(undefined, 'batch_pin', 'none', 'unpinned') }, { requiredKeys: ['topics'] }),
    data: fc.array(item, { minLength: 1, maxLength: 3 }),
    idempotencyKey: fc.option(fc.uuid(), { nil: undefined }),
  })
  const extra = fc.oneof(item, fc.array(item, { maxLength: 4 }), fc.constantFrom<Json>(seeds.dataId, seeds.datatype, { members: [{ identity: 'x' }] }))
  return fc.tuple(base, fc.array(mutationArb(BROADCAST_PATHS, extra), { maxLength: 3 })).map(([b, ms]) => mutate(stripUndefined(b), ms))
}

/** POST /data JSON bodies one step from valid. */
export function dataBodyArb(seeds: Seeds): fc.Arbitrary<Json> {
  const base = fc.oneof(
    dataValueArb.map((value): Json => ({ value })),
    fc.constant<Json>({ value: { n: 1 }, datatype: seeds.datatype, validator: 'json' }),
    fc.constant<Json>({ value: 'x', validator: 'none' }),
  )
  const extra = fc.constantFrom<Json>(seeds.datatype, { name: seeds.datatype.name, version: 'nope' }, 'json', 'none', 'definition', seeds.dataId)
  return fc.tuple(base, fc.array(mutationArb(DATA_PATHS, extra), { maxLength: 3 })).map(([b, ms]) => mutate(b, ms))
}

/** Schemas a datatype may try to define: ordinary, invalid, costly, regex engines' traps. */
const schemaArb: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(
    { type: 'object' },
    { type: 'string', pattern: '^(a+)+$' },
    { type: 'string', pattern: '(a)\\1' },
    { type: 'string', pattern: '(?=a)a' },
    { type: 'string', pattern: '(' },
    { type: 'string', format: 'no-such-format' },
    { type: 'array', uniqueItems: true },
    { $ref: '#/nope' },
    { $ref: 'http://127.0.0.1:1/schema.json' },
    { $defs: { n: { type: 'array', items: { $ref: '#/$defs/n' } } }, $ref: '#/$defs/n' },
    { $schema: 'http://json-schema.org/draft-04/schema#' },
    { type: 'nope' },
    { required: 'x' },
    JSON.parse('{"properties":{"__proto__":{"type":"string"}}}') as Json,
    { minLength: -1 },
    { maximum: 1e400 } as unknown as Json,
  ),
  fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>,
  fc.integer({ min: 1, max: 2_000 }).map((n) => nestSchema(n)),
)

/** Datatype definitions one step from valid; a fresh name each, so valid ones are defined (and confirmed) for real. */
export function datatypeBodyArb(): fc.Arbitrary<Json> {
  const base = fc.record({
    name: fc.stringMatching(/^fz[a-z0-9]{6}$/),
    version: fc.constantFrom('1', '1.0.0', 'v2'),
    value: schemaArb,
  })
  return fc.tuple(base, fc.array(mutationArb(DATATYPE_PATHS, schemaArb), { maxLength: 2 })).map(([b, ms]) => mutate(b, ms))
}

/**
 * JSON text a parser has to survive: any JSON value, duplicate keys, truncation, deep nesting, numbers beyond
 * doubles, escapes of lone surrogates, a byte-order mark, invalid UTF-8, and no body at all.
 */
export const jsonTextArb: fc.Arbitrary<Uint8Array> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue().map((v) => utf8(JSON.stringify(v))) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', '\n', 'null', 'true', '[]', '"x"', '0', '{}', '{"data":[{"value":1}],"data":[]}', '{"header":{},"header":{"topics":["a"]},"data":[{"value":1}]}', '{"value":1,"value":2}').map(utf8) },
  { weight: 2, arbitrary: fc.tuple(fc.jsonValue(), fc.nat()).map(([v, at]) => {
    const t = JSON.stringify(v)
    return utf8(t.slice(0, t.length > 1 ? at % t.length : 0))
  }) },
  { weight: 2, arbitrary: fc.tuple(fc.integer({ min: 100, max: 60_000 }), fc.constantFrom('[', '{"a":')).map(([n, open]) => utf8(open.repeat(n) + '1' + (open === '[' ? ']' : '}').repeat(n))) },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 60_000 }).map((n) => utf8(`{"data":[{"value":${'['.repeat(n)}${']'.repeat(n)}}]}`)) },
  { weight: 2, arbitrary: edgeNumberText.map((n) => utf8(`{"data":[{"value":${n}}],"header":{"topics":["fuzz"]}}`)) },
  { weight: 1, arbitrary: fc.constantFrom('"\\ud800"', '{"value":"\\udfff"}', '{"value":"\\u0000"}', '{"value":"\\uZZZZ"}', '{"value":"\\x41"}', "{'value':1}", '{value:1}', '{"value":NaN}', '{"value":1,}', '[1,]', '{"a":1}{"b":2}').map(utf8) },
  { weight: 1, arbitrary: fc.jsonValue().map((v) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), utf8(JSON.stringify(v))])) },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.jsonValue(), fc.uint8Array({ minLength: 1, maxLength: 4, min: 0x80, max: 0xff }), fc.nat()).map(([v, bad, at]) => {
      const t = utf8(JSON.stringify({ data: [{ value: v }] }))
      const i = at % t.length
      return Buffer.concat([t.subarray(0, i), bad, t.subarray(i)])
    }),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 200 }).map(utf8) },
)

export function utf8(s: string): Buffer {
  return Buffer.from(s, 'utf8')
}

function nestArrays(depth: number): Json {
  let v: Json = []
  for (let i = 1; i < depth; i++) v = [v]
  return v
}

function nestSchema(depth: number): Json {
  let v: Json = { type: 'object' }
  for (let i = 0; i < depth; i++) v = { type: 'object', properties: { n: v } }
  return v
}

/** fc.record with optional keys leaves `undefined` values in; JSON.stringify would drop them anyway. */
function stripUndefined<T>(v: T): Json {
  return JSON.parse(JSON.stringify(v)) as Json
}
