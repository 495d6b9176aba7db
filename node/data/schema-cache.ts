import type { DatatypesRepo } from '../db/repos/datatypes.js'
import { compileDatatypeSchema } from './validation-schema.js'
import { exhaustedMessage } from './validation-verdict.js'
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
    const compiled = compileDatatypeSchema(dt.value)
    const datatype = { name, version }
    const found: DatatypeCheck = {
      // The bare check (tests, tools): what the validator would say, without the datatype's name in front.
      check: (valueRaw) => {
        const { problem } = compiled.check(valueRaw)
        return typeof problem === 'object' ? exhaustedMessage(datatype, problem, valueRaw.length) : problem
      },
      orderedAt: dt.orderedAt,
      schema: { compiled, raw: dt.value },
    }
    cache.set(key, found)
    if (cache.size > maxEntries) cache.delete(cache.keys().next().value!)
    return found
  }
}
