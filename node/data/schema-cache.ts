import type { ValidateFunction } from 'ajv/dist/2020.js'
import type { DatatypesRepo } from '../db/repos/datatypes.js'
import { compileSchema, summarizeErrors } from './datatype.js'
import type { DatatypeCheck, DatatypeLookup } from './validator.js'

export const DEFAULT_SCHEMA_CACHE_SIZE = 500

/**
 * Looks datatypes up for validation, keeping compiled schemas by (namespace, name, version). A confirmed datatype
 * never changes, so an entry never goes stale; the bound only limits memory, evicting the least recently used.
 * Absent datatypes are not remembered: one may be confirmed at any moment.
 *
 * Reads go through the database connection, so inside the aggregator's transaction they see a datatype that
 * the same transaction has just confirmed.
 */
export function datatypeLookup(repo: DatatypesRepo, maxEntries = DEFAULT_SCHEMA_CACHE_SIZE): DatatypeLookup {
  const cache = new Map<string, DatatypeCheck>()
  return (namespace, name, version) => {
    const key = JSON.stringify([namespace, name, version])
    const hit = cache.get(key)
    if (hit) {
      // Map keeps insertion order: re-inserting makes this the most recently used.
      cache.delete(key)
      cache.set(key, hit)
      return hit
    }
    const dt = repo.byNameVersion(namespace, name, version)
    if (!dt) return undefined
    const found: DatatypeCheck = { check: checker(compileSchema(dt.value)), orderedAt: dt.orderedAt }
    cache.set(key, found)
    if (cache.size > maxEntries) cache.delete(cache.keys().next().value!)
    return found
  }
}

function checker(validate: ValidateFunction): DatatypeCheck['check'] {
  return (valueRaw) => {
    let value: unknown
    try {
      value = JSON.parse(valueRaw)
    } catch {
      return 'the value is not JSON'
    }
    return validate(value) ? undefined : summarizeErrors(validate.errors)
  }
}
