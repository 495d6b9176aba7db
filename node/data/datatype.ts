import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js'
import ajvFormats from 'ajv-formats'
import { RE2JS } from 're2js'
import { ParleyError } from '../core/errors.js'
import { isUuid } from '../core/ids.js'
import { parseJsonRaw, type JsonNode } from '../core/json.js'
import { NAME_RE } from '../core/names.js'
import { optString } from '../core/input.js'
import { isValidator, MAX_VALIDATED_DEPTH, type DatatypeRef, type Validator } from '../model/index.js'


// A dotted version number, optionally with semver's pre-release and build suffixes. Bounded like names, so
// that a version always fits where FireFly stores one.
const VERSION_RE = /^\d+(\.\d+)*(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$/
const MAX_VERSION = 64

/** Why `name` cannot name a datatype, or undefined. */
export function datatypeNameProblem(name: string): string | undefined {
  if (!NAME_RE.test(name)) return `datatype name must be 1-64 letters, digits, '.', '_' or '-', starting and ending alphanumeric: ${JSON.stringify(name)}`
  if (isUuid(name)) return `datatype name must not be a UUID: ${JSON.stringify(name)}`
  return undefined
}

/** Why `version` is not a datatype version, or undefined. */
export function datatypeVersionProblem(version: string): string | undefined {
  if (version.length > MAX_VERSION || !VERSION_RE.test(version)) {
    return `datatype version must be a dotted version number such as 1, 1.0 or 2.3.4, optionally with a pre-release (-rc.1) and build (+build.5) suffix: ${JSON.stringify(version)}`
  }
  return undefined
}

export function checkDatatypeName(name: string): void {
  const p = datatypeNameProblem(name)
  if (p) throw new ParleyError('INVALID_FIELD', p)
}

export function checkDatatypeVersion(version: string): void {
  const p = datatypeVersionProblem(version)
  if (p) throw new ParleyError('INVALID_FIELD', p)
}

// ajv-formats is CommonJS whose typings describe only its `default`; under NodeNext the default import is the
// module object as typed, though at run time it is the plugin itself (the module sets both).
type FormatsPlugin = typeof ajvFormats.default
const addFormats: FormatsPlugin = (typeof ajvFormats === 'function' ? ajvFormats : ajvFormats.default) as FormatsPlugin

const AJV_OPTIONS = { allErrors: true, strict: false, logger: false as const }

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

let metaValidator: Ajv2020 | undefined
/**
 * Checks schemas against the 2020-12 meta-schema. Shared, because compiling the meta-schema is the costly part,
 * and safe to share because it only ever treats user schemas as data.
 */
function meta(): Ajv2020 {
  if (!metaValidator) {
    metaValidator = new Ajv2020(AJV_OPTIONS)
    addFormats(metaValidator)
  }
  return metaValidator
}

/**
 * Compiles a JSON Schema (draft 2020-12) given as JSON text; anything that is not a schema object, fails the
 * meta-schema or does not compile is the caller's mistake (400, with Ajv's words).
 *
 * Each schema compiles in an instance of its own: Ajv registers every `$id` it meets in the instance, so a shared
 * one would let one datatype's `$ref` resolve against another's `$id` on a member that happened to compile that
 * one first, and members must all decide alike. A `$ref` to anything outside the schema (other than the
 * meta-schema) is never fetched: compilation fails.
 */
export function compileSchema(schemaRaw: string): ValidateFunction {
  let node: JsonNode
  try {
    // Compiling a schema recurses through it: a depth every member refuses alike, not wherever a stack runs out.
    node = parseJsonRaw(schemaRaw, { maxDepth: MAX_VALIDATED_DEPTH })
  } catch (err) {
    throw new ParleyError('INVALID_FIELD', `datatype value is not JSON (or nests deeper than ${MAX_VALIDATED_DEPTH}): ${err instanceof Error ? err.message : String(err)}`)
  }
  if (node.kind !== 'object') throw new ParleyError('INVALID_FIELD', 'datatype value must be a JSON Schema object')
  const schema = node.value
  const m = meta()
  let valid: boolean
  try {
    valid = m.validateSchema(schema) as boolean
  } catch (err) {
    // An unknown `$schema` (e.g. draft-07) lands here.
    throw new ParleyError('INVALID_FIELD', `datatype value is not a JSON Schema (draft 2020-12): ${err instanceof Error ? err.message : String(err)}`)
  }
  if (!valid) throw new ParleyError('INVALID_FIELD', `datatype value is not a valid JSON Schema (draft 2020-12): ${m.errorsText(m.errors, { dataVar: 'schema' })}`)
  const ajv = new Ajv2020({ ...AJV_OPTIONS, validateSchema: false, code: { regExp: linearRegExp } })
  addFormats(ajv)
  try {
    return ajv.compile(schema)
  } catch (err) {
    throw new ParleyError('INVALID_FIELD', `datatype value does not compile as a JSON Schema: ${err instanceof Error ? err.message : String(err)}`)
  }
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

/** `{name, version}` naming a datatype (`where` names the field in errors); absent or null: none. */
export function parseDatatypeRef(dt: JsonNode | undefined, where: string): DatatypeRef | undefined {
  if (dt === undefined || dt.kind === 'null') return undefined
  if (dt.kind !== 'object') throw new ParleyError('INVALID_FIELD', `${where} must be {name, version}`)
  const name = optString(dt.get('name'), `${where}.name`)
  const version = optString(dt.get('version'), `${where}.version`) ?? ''
  if (!name) throw new ParleyError('INVALID_FIELD', `${where}.name is required`)
  return { name, version }
}

/** A data item's validator: `json` (the default, also for an empty value) or `none`. */
export function parseValidator(v: string | undefined, where: string): Validator {
  if (v === undefined || v === '') return 'json'
  if (!isValidator(v)) throw new ParleyError('INVALID_FIELD', `${where} must be json or none: ${JSON.stringify(v)}`)
  return v
}
