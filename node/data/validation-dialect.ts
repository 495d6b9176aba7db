import { createRequire } from 'node:module'
import { Ajv, type Options } from 'ajv'
import { Ajv2019 } from 'ajv/dist/2019.js'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { ParleyError } from '../core/errors.js'

/**
 * The JSON Schema dialects a datatype may be written in, chosen by its `$schema` as FireFly's validator
 * (santhosh-tekuri/jsonschema, draft 2020-12 by default) chooses: no `$schema` means 2020-12, and a `$schema` names
 * a dialect by its meta-schema's URI, `http` or `https`, with or without an empty fragment (`#`). Each dialect
 * validates with its own rules (Ajv's class for that draft): draft-07 reads `definitions`, `dependencies` and tuple
 * `items`; 2019-09 reads `$defs`, `dependentRequired`, `dependentSchemas`, `$recursiveRef` and tuple `items`;
 * 2020-12 reads `prefixItems` and `$dynamicRef`. Only the root's `$schema` chooses; a member decides from the schema
 * text alone, so every member picks the same dialect.
 */

/** Every Ajv class's shared base: what the bounded compile and the formats need of an instance. */
export type AnyAjv = Ajv | Ajv2019 | Ajv2020

export interface Dialect {
  /** As users name it in messages. */
  readonly name: 'draft-07' | '2019-09' | '2020-12'
  /** The meta-schema's id as Ajv keys it. */
  readonly metaSchemaId: string
  /** An Ajv of this dialect's class. */
  create(opts: Options): AnyAjv
  /** The dialect's meta-schemas (the schema and its vocabularies), as JSON. */
  metaSchemas(): readonly unknown[]
}

const require = createRequire(import.meta.url)
const load = (base: string, files: readonly string[]) => (): unknown[] => files.map((f) => require(`ajv/dist/refs/${base}${f}.json`) as unknown)

export const DRAFT_07: Dialect = {
  name: 'draft-07',
  metaSchemaId: 'http://json-schema.org/draft-07/schema',
  create: (opts) => new Ajv(opts),
  metaSchemas: load('json-schema-draft-07', ['']),
}

export const DRAFT_2019_09: Dialect = {
  name: '2019-09',
  metaSchemaId: 'https://json-schema.org/draft/2019-09/schema',
  create: (opts) => new Ajv2019(opts),
  metaSchemas: load('json-schema-2019-09/', ['schema', 'meta/applicator', 'meta/content', 'meta/core', 'meta/format', 'meta/meta-data', 'meta/validation']),
}

export const DRAFT_2020_12: Dialect = {
  name: '2020-12',
  metaSchemaId: 'https://json-schema.org/draft/2020-12/schema',
  create: (opts) => new Ajv2020(opts),
  metaSchemas: load('json-schema-2020-12/', ['schema', 'meta/applicator', 'meta/unevaluated', 'meta/content', 'meta/core', 'meta/format-annotation', 'meta/meta-data', 'meta/validation']),
}

/** Meta-schema URIs (scheme and fragment taken off) to their dialect; `json-schema.org/schema` is "the latest". */
const BY_URI = new Map<string, Dialect>([
  ['json-schema.org/draft-07/schema', DRAFT_07],
  ['json-schema.org/draft/2019-09/schema', DRAFT_2019_09],
  ['json-schema.org/draft/2020-12/schema', DRAFT_2020_12],
  ['json-schema.org/schema', DRAFT_2020_12],
])

/** Dialects FireFly also reads that Ajv 8 does not implement with their own rules: refused by name, not as unknown. */
const OLDER = new Set(['json-schema.org/draft-06/schema', 'json-schema.org/draft-04/schema', 'json-schema.org/draft-03/schema'])

const ACCEPTED = 'draft-07 (http://json-schema.org/draft-07/schema#), 2019-09 (https://json-schema.org/draft/2019-09/schema) or 2020-12 (https://json-schema.org/draft/2020-12/schema, also when $schema is left out)'

/**
 * The dialect `schema` (a schema object) is written in. A `$schema` that is not a string, or names no dialect
 * accepted here, is the caller's mistake: FireFly fails to load such a schema too (it would fetch an unknown
 * meta-schema, and has no loader for the web), and a member never fetches anything to decide.
 */
export function dialectOf(schema: Record<string, unknown>): Dialect {
  if (!Object.hasOwn(schema, '$schema')) return DRAFT_2020_12
  const declared = schema.$schema
  if (typeof declared !== 'string') throw new ParleyError('INVALID_FIELD', `datatype value's $schema must be a string naming a JSON Schema dialect: ${ACCEPTED}`)
  const m = /^https?:\/\/(.*?)(?:#\/?)?$/.exec(declared)
  const uri = m?.[1]
  const dialect = uri === undefined ? undefined : BY_URI.get(uri)
  if (dialect) return dialect
  const shown = JSON.stringify(declared.length > 200 ? `${declared.slice(0, 199)}…` : declared)
  if (uri !== undefined && OLDER.has(uri)) throw new ParleyError('INVALID_FIELD', `datatype value's $schema ${shown} names a JSON Schema dialect not supported here; use ${ACCEPTED}`)
  throw new ParleyError('INVALID_FIELD', `datatype value's $schema ${shown} names no known JSON Schema dialect; use ${ACCEPTED}`)
}
