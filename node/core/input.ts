import { ParleyError } from './errors.js'
import type { JsonNode } from './json.js'

/**
 * Readers of caller input shared by the API and the capabilities: each mistake is an INVALID_FIELD naming the field.
 */

/** A string member of a request body; absent or null: undefined; anything else is the caller's mistake, named. */
export function optString(node: JsonNode | undefined, where: string): string | undefined {
  if (node === undefined || node.kind === 'null') return undefined
  if (node.kind !== 'string') throw new ParleyError('INVALID_FIELD', `${where} must be a string`)
  return String(node.value)
}

/**
 * A true/false flag given as text: `true`/`1` or `false`/`0`, any case. `empty` says what an empty value means: a
 * bare query key (`?confirm`) is a flag that is present (true); an empty form field is a flag left unset (false).
 */
export function parseBool(raw: string, name: string, opts: { empty: boolean }): boolean {
  const v = raw.trim().toLowerCase()
  if (v === '') return opts.empty
  if (v === 'true' || v === '1') return true
  if (v === 'false' || v === '0') return false
  throw new ParleyError('INVALID_FIELD', `${name} must be true or false: ${JSON.stringify(raw)}`)
}
