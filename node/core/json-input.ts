import { ParleyError } from './errors.js'
import type { JsonNode } from './json.js'

/** A string member of a request body; absent or null: undefined; anything else is the caller's mistake, named. */
export function optString(node: JsonNode | undefined, where: string): string | undefined {
  if (node === undefined || node.kind === 'null') return undefined
  if (node.kind !== 'string') throw new ParleyError('INVALID_FIELD', `${where} must be a string`)
  return String(node.value)
}
