import { ParleyError } from '../core/errors.js'
import { isUuid } from '../core/ids.js'
import type { JsonNode } from '../core/json.js'
import { NAME_RE } from '../core/names.js'
import { optString } from '../core/input.js'
import { isValidator, type DatatypeRef, type Validator } from '../model/index.js'


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

export { compileSchema, summarizeErrors } from './validation-schema.js'

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
