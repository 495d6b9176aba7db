import { _, Name, type KeywordDefinition } from 'ajv/dist/2020.js'
import { CODE_CHARS_PER_STACK_UNIT, MAX_HELD_FAILURES, MAX_STACK_UNITS, type StepMeter } from './validation-budget.js'
import { QUADRATIC_FORMATS } from './validation-formats.js'
import { regexProgramSize } from '../core/regex-size.js'

/**
 * Counting the steps of a validation, in the code Ajv compiles: before compiling, every subschema of a datatype's
 * schema gets a keyword of its own carrying its weight, and that keyword's code adds the weight each time the
 * subschema is evaluated, then stops the run once past the budget. Counting evaluations of subschemas bounds what
 * `$ref` recursion and nested `anyOf`/`oneOf`/`allOf` can multiply; the weights bound what one evaluation costs.
 */

/** The keyword's name: injected by meterSchema, overwriting any value a schema gave it. */
export const STEPS_KEYWORD = '$parleySteps'

/**
 * What one evaluation of a subschema costs: `[fixed, per 16 characters of a string, per key of an object, per
 * 128 characters squared of a string]`. Calibrated so that a step takes 5–50 ns whatever the keyword: RE2 reads
 * about 100 ns a character, and tests each key against each pattern in about 300 ns.
 */
type Weights = [number, number, number, number]

// Where a schema holds subschemas, in any dialect a datatype may use (validation-dialect.ts): draft-07's `definitions`,
// `dependencies`, tuple `items` and `additionalItems` beside 2019-09's and 2020-12's keywords.
const ONE_SCHEMA = new Set(['items', 'contains', 'additionalProperties', 'propertyNames', 'not', 'if', 'then', 'else', 'unevaluatedItems', 'unevaluatedProperties', 'contentSchema', 'additionalItems'])
const SCHEMA_LIST = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems'])
const SCHEMA_MAP = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies'])
/** Keywords whose values are data (or lists of names), never schemas: not annotated, and no `$ref` may point into them. */
const DATA = new Set(['enum', 'const', 'default', 'examples', 'required', 'type', 'dependentRequired', '$vocabulary'])
/** Keywords that walk an object's keys. */
const KEY_WALKERS = ['additionalProperties', 'patternProperties', 'propertyNames', 'unevaluatedProperties', 'minProperties', 'maxProperties']

const sizeUnits = (v: unknown): number => Math.floor((JSON.stringify(v) ?? '').length / 64)
const entries = (v: unknown): number => (Array.isArray(v) ? v.length : v !== null && typeof v === 'object' ? Object.keys(v).length : 0)
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
/**
 * What running one RE2 expression costs, relative to the simplest: in proportion to its compiled program, which a
 * repeat makes far larger than its text (`[a-z]{1000}`).
 */
const patternSize = (instructions: number): number => 1 + Math.floor(instructions / 32)

/** `programOf`: the RE2 program size of a pattern (counted once per distinct pattern by meterSchema). */
function weightsOf(s: Record<string, unknown>, programOf: (pattern: string) => number): Weights {
  let fixed = 1
  for (const [k, v] of Object.entries(s)) {
    fixed += 1
    if (k === 'enum' && Array.isArray(v)) fixed += Math.floor(v.length / 16) + v.reduce((n: number, e) => n + sizeUnits(e), 0)
    else if (k === 'const') fixed += sizeUnits(v)
    else if (k === 'dependentRequired' && isObject(v)) for (const names of Object.values(v)) fixed += 1 + entries(names)
    // draft-07: a list of names (as dependentRequired) or a subschema (as dependentSchemas) per property.
    else if (k === 'dependencies' && isObject(v)) for (const d of Object.values(v)) fixed += 1 + (Array.isArray(d) ? d.length : 0)
    else if (k === 'required' || k === 'type' || SCHEMA_MAP.has(k)) fixed += entries(v)
    else if (k === 'pattern' || k === 'format') fixed += 16
  }
  let perChars = 0
  if (typeof s.pattern === 'string') perChars += 64 * patternSize(programOf(s.pattern))
  if ('format' in s) perChars += 64
  for (const k of ['minLength', 'maxLength', 'enum', 'const']) if (k in s) perChars += 1
  let perKey = 0
  if (KEY_WALKERS.some((k) => k in s && s[k] !== true)) {
    perKey = 1
    if (isObject(s.patternProperties)) for (const p of Object.keys(s.patternProperties)) perKey += 8 * patternSize(programOf(p))
  }
  const quadratic = typeof s.format === 'string' && QUADRATIC_FORMATS.has(s.format) ? 1 : 0
  return [fixed, perChars, perKey, quadratic]
}

/** A schema ready for Ajv, with what counting its steps needs. */
export interface MeteredSchema {
  /** A copy of the schema with every subschema annotated with its weight. */
  schema: unknown
  /** The sum of all weights: one evaluation of every subschema. */
  weight: number
  /** How many subschemas, keywords and named subschemas it has. */
  units: number
  /** The RE2 instructions its distinct patterns (`pattern`, `patternProperties` names) compile to, together. */
  patternInstructions: number
  /** The characters of its longest pattern. */
  longestPattern: number
  /**
   * Why it cannot be metered, if so: a `$ref` or `$dynamicRef` whose JSON-pointer fragment leads into a data
   * keyword (`#/enum/0`, `#/$defs/a/default`) would make Ajv compile data as a schema, with no weights in it.
   */
  refIntoData: string | undefined
}

/**
 * Annotates `schema` (already checked against the meta-schema). Every object a `$ref` may reach is annotated,
 * including those under keywords Ajv does not know (a `$ref` may point there); only data keywords are left alone,
 * and a `$ref` into one of those is reported.
 */
export function meterSchema(schema: unknown): MeteredSchema {
  let weight = 0
  let units = 0
  let refIntoData: string | undefined
  // Each distinct pattern's program, counted once: Ajv compiles each distinct pattern once per schema (it caches them
  // by their text), and these are what the schema's bounds add up.
  const programs = new Map<string, number>()
  const programOf = (p: string): number => {
    let n = programs.get(p)
    if (n === undefined) programs.set(p, (n = regexProgramSize(p)))
    return n
  }
  const subschema = (s: unknown): unknown => {
    if (!isObject(s)) return s
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(s)) {
      if (k === STEPS_KEYWORD) continue
      let copy: unknown
      if (DATA.has(k)) copy = v
      else if (ONE_SCHEMA.has(k)) copy = Array.isArray(v) ? v.map(subschema) : subschema(v)
      else if (SCHEMA_LIST.has(k)) copy = Array.isArray(v) ? v.map(subschema) : v
      else if (SCHEMA_MAP.has(k)) copy = isObject(v) ? Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, subschema(sub)])) : v
      else copy = anything(v)
      // A member, even one named "__proto__" (plain assignment would set the prototype instead).
      Object.defineProperty(out, k, { value: copy, writable: true, enumerable: true, configurable: true })
      if ((k === '$ref' || k === '$dynamicRef') && typeof v === 'string' && refIntoData === undefined) {
        const into = dataKeywordOnPath(v)
        if (into) refIntoData = `${k} ${JSON.stringify(v)} points into "${into}", which holds data, not a schema`
      }
    }
    // Counted apart from the copy's own keyword, which is not a cost.
    const w = weightsOf(out, programOf)
    weight += w[0]
    units += 1 + Object.keys(out).length + entries(out.properties) + entries(out.patternProperties) + entries(out.dependentSchemas) + entries(out.dependencies)
    out[STEPS_KEYWORD] = w
    return out
  }
  // Under a keyword Ajv ignores: objects in it are treated as schemas in case a `$ref` makes them one.
  const anything = (v: unknown): unknown => (Array.isArray(v) ? v.map(anything) : subschema(v))
  const metered = subschema(schema)
  let patternInstructions = 0
  let longestPattern = 0
  for (const [p, n] of programs) {
    patternInstructions += n
    longestPattern = Math.max(longestPattern, p.length)
  }
  return { schema: metered, weight, units, patternInstructions, longestPattern, refIntoData }
}

/**
 * The data keyword a JSON-pointer fragment leads into, if any. Read from the pointer's shape alone (keyword, then a
 * name or an index where the keyword holds a map or a list), so it holds whichever resource the reference resolves
 * against.
 */
function dataKeywordOnPath(ref: string): string | undefined {
  const hash = ref.indexOf('#')
  if (hash === -1) return undefined
  const fragment = ref.slice(hash + 1)
  if (!fragment.startsWith('/')) return undefined
  const segments = fragment
    .slice(1)
    .split('/')
    .map((s) => {
      let d = s
      try {
        d = decodeURIComponent(s)
      } catch {
        // Not percent-encoded text: Ajv fails to resolve it anyway.
      }
      return d.replace(/~1/g, '/').replace(/~0/g, '~')
    })
  // After a keyword that holds a map or list, the next segment is a name or an index, then a keyword again.
  let expectKeyword = true
  for (const seg of segments) {
    if (!expectKeyword) {
      expectKeyword = true
      continue
    }
    if (DATA.has(seg)) return seg
    if (SCHEMA_MAP.has(seg) || SCHEMA_LIST.has(seg)) expectKeyword = false
    // Under an unknown keyword an index may come next; read as a keyword, it names no data keyword either.
  }
  return undefined
}

/** Ajv's count of the failures a compiled function holds (a local it declares in every validate function). */
const HELD = new Name('errors')

/** Σ over keys of one step and one per 8 characters: what testing each key against patterns reads. */
function keyCost(o: Record<string, unknown>): number {
  let n = 0
  for (const k in o) n += 1 + (k.length >> 3)
  return n
}

/**
 * The keyword meterSchema injects. Runs first among a subschema's keywords (`before` the first rule Ajv has), so a
 * run stops before the work it cannot pay for.
 */
export function stepsKeyword(meter: StepMeter, before: string | undefined): KeywordDefinition {
  return {
    keyword: STEPS_KEYWORD,
    schemaType: 'array',
    ...(before ? { before } : {}),
    code(cxt) {
      const { gen, data } = cxt
      const [fixed, perChars, perKey, quadratic] = cxt.schema as Weights
      const m = gen.scopeValue('obj', { ref: meter })
      gen.code(_`${m}.steps += ${fixed}`)
      if (perChars > 0) gen.if(_`typeof ${data} == "string"`, () => gen.code(_`${m}.steps += (${data}.length >> 4) * ${perChars}`))
      if (quadratic > 0) gen.if(_`typeof ${data} == "string"`, () => gen.code(_`${m}.steps += Math.floor(${data}.length * ${data}.length / 128)`))
      if (perKey > 0) {
        const keys = gen.scopeValue('func', { ref: keyCost })
        gen.if(_`${data} && typeof ${data} == "object" && !Array.isArray(${data})`, () => gen.code(_`${m}.steps += ${keys}(${data}) * ${perKey}`))
      }
      // Failures held cost too: Ajv copies them into the caller after each failed call.
      gen.code(_`${m}.steps += ${HELD} >> 5`)
      gen.if(_`${m}.steps > ${m}.limit || ${HELD} > ${MAX_HELD_FAILURES}`, () => gen.code(_`${m}.stop(${HELD})`))
    },
  }
}

/** The head of every function Ajv compiles: `return function validate12(data, {instancePath="", …}={}){`. */
const FUNCTION_HEAD = /return function [\w$]+\(data, \{[^)]*\}=\{\}\)\{/

/**
 * Ajv's `code.process` hook: wraps the body of a compiled validate function so that it counts the stack units the
 * running validate functions hold (`meterPath` names the StepMeter in the generated code), stopping at
 * MAX_STACK_UNITS instead of wherever the stack happens to end. Fails loudly if Ajv's code ever takes another shape.
 */
export function countStackUnits(source: string, meterPath: string): string {
  const head = FUNCTION_HEAD.exec(source)
  if (!head || !source.endsWith('}')) throw new Error('cannot meter the code Ajv generated: unexpected function shape')
  const bodyStart = head.index + head[0].length
  const units = 1 + Math.floor(source.length / CODE_CHARS_PER_STACK_UNIT)
  return (
    source.slice(0, bodyStart) +
    `if((${meterPath}.stack+=${units})>${MAX_STACK_UNITS}){${meterPath}.stack-=${units};${meterPath}.tooDeep()}try{` +
    source.slice(bodyStart, -1) +
    `}finally{${meterPath}.stack-=${units}}}`
  )
}
