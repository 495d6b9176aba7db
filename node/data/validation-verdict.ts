import { nestsDeeperThan } from '../core/json.js'
import { MAX_VALIDATED_DEPTH, type DatatypeRef } from '../model/index.js'
import { BASE_STEPS, MAX_HELD_FAILURES, STEPS_PER_CHAR, type Exhausted } from './validation-budget.js'
import type { CheckOutcome } from './validation-schema.js'

/** A value's verdict against a datatype: why it fails (worded for a SCHEMA_VALIDATION_FAILED), or undefined; and its cost. */
export interface Verdict {
  failure: string | undefined
  steps: number
}

/**
 * The one place a value's verdict is reached and worded, on the main thread and in the validation worker alike:
 * the depth limit first (validation recurses), then the schema's check within its budget.
 */
export function schemaVerdict(datatype: DatatypeRef, check: (valueRaw: string) => CheckOutcome, valueRaw: string): Verdict {
  if (nestsDeeperThan(valueRaw, MAX_VALIDATED_DEPTH)) {
    return { failure: `data nests deeper than ${MAX_VALIDATED_DEPTH} levels; a value checked against a datatype may nest at most ${MAX_VALIDATED_DEPTH}`, steps: 0 }
  }
  const { problem, steps } = check(valueRaw)
  if (problem === undefined) return { failure: undefined, steps }
  if (typeof problem === 'string') return { failure: `data does not conform to datatype ${datatype.name}/${datatype.version}: ${problem}`, steps }
  return { failure: exhaustedMessage(datatype, problem, valueRaw.length), steps }
}

/** Why a check stopped before its verdict, as every member words it. */
export function exhaustedMessage(datatype: DatatypeRef, e: Exhausted, chars: number): string {
  const dt = `${datatype.name}/${datatype.version}`
  if (e.kind === 'steps') {
    return `validation of this value against datatype ${dt} needs more than ${e.budget} steps, the budget for a value of ${chars} characters (${BASE_STEPS} + ${STEPS_PER_CHAR} per character + the schema's own weight)`
  }
  if (e.kind === 'stack') return `validation of this value against datatype ${dt} nests subschema calls deeper than the ${e.limit} stack units a check may hold (a $ref cycle that does not descend into the value?)`
  return `validation of this value against datatype ${dt} holds more than ${MAX_HELD_FAILURES} failed checks at once`
}
