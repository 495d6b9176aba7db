import { ParleyError } from '../core/errors.js'
import { nestsDeeperThan } from '../core/json.js'
import { MAX_VALIDATED_DEPTH, type Data, type DatatypeRef } from '../model/index.js'

/**
 * Looks a datatype up by namespace, name and version; answers a function that checks a value against its schema,
 * and where the datatype's definition stands in chain order (see Datatype.orderedAt).
 */
export type DatatypeLookup = (namespace: string, name: string, version: string) => DatatypeCheck | undefined

export interface DatatypeCheck {
  check: (valueRaw: string) => string | undefined
  orderedAt: number
}

/** Checks data against its datatype; the data capability provides it. */
export interface DataValidator {
  /** `orderedBefore`: on receipt, the message's place in chain order; a datatype defined after it does not count. */
  validate(namespace: string, d: Data, orderedBefore?: number): void
  /** Throws UNKNOWN_DATATYPE unless the datatype exists here: lets an upload fail before its blob is read. */
  requireDatatype(namespace: string, validator: string, datatype: DatatypeRef): void
}

/**
 * Checks data against its validator and datatype, at send time and again on every receiving member: the
 * same rules everywhere, so a member that skipped its own check is caught by the others.
 */
export class DataValidatorImpl implements DataValidator {
  constructor(private readonly lookup: DatatypeLookup) {}

  validate(namespace: string, d: Data, orderedBefore?: number): void {
    if (d.validator === 'none') return
    if (d.validator !== 'json') throw new ParleyError('INVALID_FIELD', `validator ${JSON.stringify(d.validator)} is not json or none`)
    if (!d.datatype) return
    const check = this.checker(namespace, d.datatype, orderedBefore)
    if (d.value === null) throw new ParleyError('SCHEMA_VALIDATION_FAILED', `data ${d.id} names datatype ${d.datatype.name}/${d.datatype.version} but has no value`)
    if (nestsDeeperThan(d.value, MAX_VALIDATED_DEPTH)) {
      throw new ParleyError('SCHEMA_VALIDATION_FAILED', `data nests deeper than ${MAX_VALIDATED_DEPTH} levels; a value checked against a datatype may nest at most ${MAX_VALIDATED_DEPTH}`)
    }
    const problem = check(d.value)
    if (problem) throw new ParleyError('SCHEMA_VALIDATION_FAILED', `data does not conform to datatype ${d.datatype.name}/${d.datatype.version}: ${problem}`)
  }

  requireDatatype(namespace: string, validator: string, datatype: DatatypeRef): void {
    if (validator !== 'none') this.checker(namespace, datatype)
  }

  private checker(namespace: string, dt: DatatypeRef, orderedBefore?: number): (valueRaw: string) => string | undefined {
    const found = this.lookup(namespace, dt.name, dt.version)
    if (!found) throw new ParleyError('UNKNOWN_DATATYPE', `datatype ${dt.name}/${dt.version} is not defined in namespace ${namespace}`)
    if (orderedBefore !== undefined && found.orderedAt >= orderedBefore) {
      throw new ParleyError('UNKNOWN_DATATYPE', `datatype ${dt.name}/${dt.version} was defined in namespace ${namespace} only after this message, in chain order`)
    }
    return found.check
  }
}
