import type { ErrorObject, ValidateFunction } from 'ajv'
import { RE2JS } from 're2js'
import { ParleyError } from '../core/errors.js'
import { parseJsonRaw, type JsonNode } from '../core/json.js'
import { addBoundedFormats } from './validation-formats.js'
import { stepBudget, StepMeter, ValidationOverflow, ValidationStopped, type Exhausted } from './validation-budget.js'
import { countStackUnits, meterSchema, stepsKeyword } from './validation-steps.js'
import { uniqueItemsKeyword } from './validation-unique-items.js'
import { MAX_PATTERN_CHARS } from '../core/regex-size.js'
import { dialectOf, type AnyAjv, type Dialect } from './validation-dialect.js'

/**
 * Datatype schemas compiled for bounded validation: patterns on RE2, `uniqueItems` in linear time, and a step meter
 * in every subschema (validation-budget.ts). The same code runs on the main thread and in the validation worker, so
 * a verdict does not depend on where it was reached. Each schema is read in its own dialect (validation-dialect.ts).
 */

/**
 * Datatype patterns (`pattern`, `patternProperties`) run on RE2 (re2js): linear in the input whatever the pattern,
 * where a JS RegExp from a stranger can take seconds on a few dozen characters (`^(a+)+$`). RE2 has no
 * backreferences or lookaround; a schema that uses them does not compile, on every member alike. Ajv caches a
 * compiled pattern by its `toString()`, so that must name the pattern.
 */
const linearRegExp = Object.assign(
  (pattern: string, flags: string) => {
    const compiled = RE2JS.compile(pattern)
    return { test: (s: string): boolean => compiled.matcher(s).find(), toString: (): string => `/${pattern}/${flags}` }
  },
  { code: 're2js' },
)

const metaValidators = new Map<Dialect, AnyAjv>()
/**
 * Checks schemas against their dialect's meta-schema. Shared, because compiling the meta-schema is the costly part,
 * and safe to share because it only ever treats user schemas as data.
 */
function meta(dialect: Dialect): AnyAjv {
  let m = metaValidators.get(dialect)
  if (!m) {
    m = dialect.create({ allErrors: true, strict: false, logger: false })
    addBoundedFormats(m)
    metaValidators.set(dialect, m)
  }
  return m
}

const meteredMeta = new Map<Dialect, unknown[]>()
/**
 * The dialect's meta-schemas with weights like any schema's: a datatype may `$ref` the meta-schema, and what it
 * validates through it counts too.
 */
function meteredMetaSchemas(dialect: Dialect): unknown[] {
  let metered = meteredMeta.get(dialect)
  if (!metered) {
    metered = dialect.metaSchemas().map((s) => meterSchema(s).schema)
    meteredMeta.set(dialect, metered)
  }
  return metered
}

/** Ajv's options for a schema's compiled code; its generated code reaches its step meter as `self.meter`. */
function meteredOptions(allErrors: boolean) {
  return {
    allErrors,
    strict: false,
    logger: false as const,
    validateSchema: false,
    meta: false,
    // Every `$ref` a call: inlining copies a referenced schema into each place that uses it, and code (and its
    // compile time) would grow with the number of references times the size of what they reference.
    inlineRefs: false,
    code: { regExp: linearRegExp, process: (source: string) => countStackUnits(source, 'self.meter') },
  }
}

/** One compiled schema's Ajv, set up alike everywhere; `allErrors`: code that collects every failure, not the first. */
function boundedAjv(dialect: Dialect, meter: StepMeter, allErrors: boolean): AnyAjv {
  // `self` in Ajv's generated code is the instance: the meter rides on it.
  const ajv = Object.assign(dialect.create(meteredOptions(allErrors)), { meter })
  addBoundedFormats(ajv)
  for (const m of meteredMetaSchemas(dialect)) ajv.addMetaSchema(m as object, undefined, false)
  // As each Ajv class does when it adds its meta-schema itself.
  ajv.refs['http://json-schema.org/schema'] = dialect.metaSchemaId
  ajv.removeKeyword('uniqueItems')
  ajv.addKeyword(uniqueItemsKeyword(meter))
  // Before the first keyword of the group that holds applicators and $ref: the charge comes before the work.
  const first = ajv.RULES.rules.find((g) => g.type === undefined)?.rules[0]?.keyword
  ajv.addKeyword(stepsKeyword(meter, first))
  return ajv
}

interface PreparedSchema {
  dialect: Dialect
  /** The schema with its weights, as Ajv compiles it. */
  metered: object
  weight: number
  units: number
}

/**
 * Up to this many units (subschemas, keywords and named subschemas: validation-steps.ts), a verdict comes from code
 * that stops at the first failure. Ajv nests that code one block deeper per check, and past about 2,000 checks in
 * one function the JavaScript parser runs out of stack (where exactly depends on the thread). Larger schemas are
 * judged by code that collects every failure, which is flat; their failing alternatives (`anyOf` branches) then hold
 * all their failures, up to MAX_HELD_FAILURES, until an alternative passes.
 */
const FAIL_FAST_MAX_UNITS = 500

/**
 * How large a schema may be, on every member alike. Compiling one is synchronous and unmetered (about 0.1-0.2 ms per
 * unit here, once per datatype per member, at definition and on first use), and Ajv's compiler recurses through the
 * schema, running out of stack at a depth that depends on how warm the process is. Within these bounds a compile stays
 * near the 100 ms a member may block, and far from any stack: refused alike everywhere rather than failing on some.
 */
export const MAX_SCHEMA_BYTES = 64 * 1024
export const MAX_SCHEMA_DEPTH = 64
export const MAX_SCHEMA_UNITS = 1000
/**
 * The RE2 instructions a schema's patterns may compile to, together (node/core/regex-size.ts). re2js compiles them
 * with the schema, at 2-9 µs an instruction: a pattern's text says little (`[a-z]{1000}` is eleven characters and
 * a thousand instructions), and within the bounds above five patterns of repeats would take seconds to compile, on every member.
 */
export const MAX_SCHEMA_PATTERN_INSTRUCTIONS = 10_000

/**
 * Reads a JSON Schema given as JSON text, in the dialect its `$schema` names, and annotates it; anything that is not
 * a schema object, names no dialect accepted here or fails its dialect's meta-schema is the caller's mistake (400,
 * with Ajv's words). The bounds are the same whatever the dialect.
 */
function prepareSchema(schemaRaw: string): PreparedSchema {
  const bytes = Buffer.byteLength(schemaRaw)
  if (bytes > MAX_SCHEMA_BYTES) throw new ParleyError('INVALID_FIELD', `datatype value is ${bytes} bytes; a schema may take at most ${MAX_SCHEMA_BYTES}`)
  let node: JsonNode
  try {
    node = parseJsonRaw(schemaRaw, { maxDepth: MAX_SCHEMA_DEPTH })
  } catch (err) {
    throw new ParleyError('INVALID_FIELD', `datatype value is not JSON (or nests deeper than ${MAX_SCHEMA_DEPTH}): ${err instanceof Error ? err.message : String(err)}`)
  }
  if (node.kind !== 'object') throw new ParleyError('INVALID_FIELD', 'datatype value must be a JSON Schema object')
  const schema = node.value
  const dialect = dialectOf(schema)
  const m = meta(dialect)
  const conforms = m.getSchema(dialect.metaSchemaId)
  if (!conforms) throw new ParleyError('INTERNAL', `the ${dialect.name} meta-schema is not loaded`)
  if (!(conforms(schema) as boolean)) {
    throw new ParleyError('INVALID_FIELD', `datatype value is not a valid JSON Schema (${dialect.name}): ${m.errorsText(conforms.errors, { dataVar: 'schema' })}`)
  }
  const { schema: metered, weight, units, patternInstructions, longestPattern, refIntoData } = meterSchema(schema)
  if (refIntoData) throw new ParleyError('INVALID_FIELD', `datatype value does not compile as a JSON Schema: ${refIntoData}`)
  if (units > MAX_SCHEMA_UNITS) {
    throw new ParleyError('INVALID_FIELD', `datatype value has ${units} subschemas and keywords; a schema may have at most ${MAX_SCHEMA_UNITS} (split it into several datatypes)`)
  }
  if (longestPattern > MAX_PATTERN_CHARS) {
    throw new ParleyError('INVALID_FIELD', `datatype value has a pattern of ${longestPattern} characters; a pattern may have at most ${MAX_PATTERN_CHARS}`)
  }
  if (patternInstructions > MAX_SCHEMA_PATTERN_INSTRUCTIONS) {
    throw new ParleyError(
      'INVALID_FIELD',
      `datatype value's patterns compile to ${patternInstructions} RE2 instructions; a schema's patterns may take at most ${MAX_SCHEMA_PATTERN_INSTRUCTIONS} (a repeat such as {1000} copies what it repeats: bound lengths with minLength and maxLength instead)`,
    )
  }
  return { dialect, metered: metered as object, weight, units }
}

/**
 * Each schema compiles in an instance of its own: Ajv registers every `$id` it meets in the instance, so a shared
 * one would let one datatype's `$ref` resolve against another's `$id` on a member that happened to compile that one
 * first, and members must all decide alike. A `$ref` to anything outside the schema (other than the meta-schema)
 * is never fetched: compilation fails.
 */
function compileWith(prepared: PreparedSchema, meter: StepMeter, allErrors: boolean): ValidateFunction {
  try {
    return boundedAjv(prepared.dialect, meter, allErrors).compile(prepared.metered)
  } catch (err) {
    // Within the size bounds a compile never runs out of stack; if one does, it is this process, not the schema.
    if (err instanceof RangeError) throw new ParleyError('INTERNAL', `compiling the datatype's schema ran out of stack: ${err.message}`, { cause: err })
    throw new ParleyError('INVALID_FIELD', `datatype value does not compile as a JSON Schema: ${err instanceof Error ? err.message : String(err)}`)
  }
}

/**
 * Compiles a datatype's schema, reporting every error (Ajv's allErrors) and unbounded: for checking that a schema
 * compiles, and for tests. Values are checked through compileDatatypeSchema.
 */
export function compileSchema(schemaRaw: string): ValidateFunction {
  return compileWith(prepareSchema(schemaRaw), new StepMeter(), true)
}

/** What one check found: nothing (the value conforms), Ajv's words, or the bound that stopped it; and its cost. */
export interface CheckOutcome {
  problem: string | Exhausted | undefined
  steps: number
}

/** A datatype's schema, ready to check values within their step budget. */
export class DatatypeSchema {
  private readonly meter = new StepMeter()
  /** The code that gives verdicts: stopping at the first failure when the schema is small enough, else collecting. */
  private readonly verdictFn: ValidateFunction
  private readonly failFast: boolean
  private detailedFn: ValidateFunction | undefined

  constructor(private readonly prepared: PreparedSchema) {
    this.failFast = prepared.units <= FAIL_FAST_MAX_UNITS
    this.verdictFn = compileWith(prepared, this.meter, !this.failFast)
  }

  /** The most steps checking `valueRaw` may take (both runs together). */
  budget(valueRaw: string): number {
    return stepBudget(valueRaw.length, this.prepared.weight)
  }

  /**
   * Checks a value's JSON text. The verdict comes from one run; when that run stopped at the first failure, a
   * failing value runs again with every error collected, within what the budget has left, to say all that is wrong
   * (if that run cannot finish, the first run's errors are reported). Depth is the caller's to check first
   * (validation-verdict.ts). Throws ValidationOverflow, never a verdict, if the stack runs out.
   */
  check(valueRaw: string): CheckOutcome {
    let value: unknown
    try {
      value = JSON.parse(valueRaw)
    } catch {
      return { problem: 'the value is not JSON', steps: 0 }
    }
    const budget = this.budget(valueRaw)
    const first = this.run(this.verdictFn, value, budget)
    if (first.stopped) return { problem: first.stopped, steps: first.steps }
    if (first.valid) return { problem: undefined, steps: first.steps }
    const firstErrors = this.verdictFn.errors
    if (!this.failFast) return { problem: summarizeErrors(firstErrors), steps: first.steps }
    const detailed = this.run(this.detailed(), value, budget - first.steps)
    const errors = detailed.stopped || detailed.valid ? firstErrors : this.detailed().errors
    return { problem: summarizeErrors(errors), steps: first.steps + detailed.steps }
  }

  private detailed(): ValidateFunction {
    this.detailedFn ??= compileWith(this.prepared, this.meter, true)
    return this.detailedFn
  }

  private run(fn: ValidateFunction, value: unknown, limit: number): { valid: boolean; stopped?: Exhausted; steps: number } {
    this.meter.arm(limit)
    try {
      return { valid: fn(value) as boolean, steps: this.meter.steps }
    } catch (err) {
      if (err instanceof ValidationStopped) return { valid: false, stopped: err.why, steps: this.meter.steps }
      if (err instanceof RangeError) throw new ValidationOverflow(`the check ran out of stack after ${this.meter.steps} steps`, { cause: err })
      throw err
    } finally {
      this.meter.disarm()
    }
  }
}

/** Compiles a datatype's schema for checking values; throws INVALID_FIELD as compileSchema does. */
export function compileDatatypeSchema(schemaRaw: string): DatatypeSchema {
  return new DatatypeSchema(prepareSchema(schemaRaw))
}

const MAX_ERRORS_SHOWN = 20
const MAX_SUMMARY = 2000

/** Ajv's errors as one readable line: where (a JSON pointer into the value) and what, every one of them, bounded. */
export function summarizeErrors(errors: readonly ErrorObject[] | null | undefined): string {
  if (!errors || errors.length === 0) return 'the value does not conform'
  const parts = errors.slice(0, MAX_ERRORS_SHOWN).map((e) => `${e.instancePath === '' ? '(root)' : e.instancePath} ${e.message ?? e.keyword}${detail(e)}`)
  if (errors.length > MAX_ERRORS_SHOWN) parts.push(`and ${errors.length - MAX_ERRORS_SHOWN} more`)
  const text = parts.join('; ')
  return text.length > MAX_SUMMARY ? `${text.slice(0, MAX_SUMMARY - 1)}…` : text
}

// Ajv names the offending property or the allowed values in `params`, not in the message, for these keywords.
function detail(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>
  if (typeof p.additionalProperty === 'string') return `: ${JSON.stringify(p.additionalProperty)}`
  if (typeof p.unevaluatedProperty === 'string') return `: ${JSON.stringify(p.unevaluatedProperty)}`
  if (Array.isArray(p.allowedValues)) {
    const s = JSON.stringify(p.allowedValues)
    return `: ${s.length > 200 ? `${s.slice(0, 199)}…` : s}`
  }
  if (e.keyword === 'const' && 'allowedValue' in p) {
    const s = JSON.stringify(p.allowedValue) ?? 'undefined'
    return `: ${s.length > 200 ? `${s.slice(0, 199)}…` : s}`
  }
  return ''
}
