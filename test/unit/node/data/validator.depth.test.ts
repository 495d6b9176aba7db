import { expect } from 'chai'
import { ParleyError } from '../../../../node/core/errors.js'
import { nestsDeeperThan } from '../../../../node/core/json.js'
import { compileSchema } from '../../../../node/data/datatype.js'
import { datatypeLookup } from '../../../../node/data/schema-cache.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import type { DatatypesRepo } from '../../../../node/db/repos/datatypes.js'
import { newId, type DataId, type DatatypeId, type Hash, type MessageId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { MAX_VALIDATED_DEPTH, type Data, type Datatype } from '../../../../node/model/index.js'

/** The audit's schema: any array of arrays, recursively. Validating a deep value recurses as deep. */
const RECURSIVE = '{"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}},"$ref":"#/$defs/n"}'
const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth)

describe('validation depth: every member reaches the same verdict, whatever its stack', () => {
  const datatype: Datatype = { id: newId<DatatypeId>(), message: newId<MessageId>(), validator: 'json', namespace: 'default', name: 'tree', version: '1', hash: '00'.repeat(32) as Hash, created: now(), value: RECURSIVE, orderedAt: 0 }
  const validator = new DataValidatorImpl(datatypeLookup({ byNameVersion: () => datatype } as unknown as DatatypesRepo))
  const item = (value: string): Data => ({ id: newId<DataId>(), validator: 'json', namespace: 'default', hash: '00'.repeat(32) as Hash, created: now(), datatype: { name: 'tree', version: '1' }, value })
  const verdict = (value: string): string => {
    try {
      validator.validate('default', item(value))
      return 'valid'
    } catch (err) {
      expect(err, 'a refusal, never a RangeError').to.be.instanceOf(ParleyError)
      return `${(err as ParleyError).code}: ${(err as ParleyError).message}`
    }
  }

  it(`validates a value nested ${MAX_VALIDATED_DEPTH} deep against a recursive schema`, () => {
    expect(verdict(nested(MAX_VALIDATED_DEPTH))).to.equal('valid')
  })

  it('refuses deeper values before validating them, with the same error at any depth (the audit found 4,500–5,000 deep split members)', () => {
    const expected = `SCHEMA_VALIDATION_FAILED: data nests deeper than ${MAX_VALIDATED_DEPTH} levels; a value checked against a datatype may nest at most ${MAX_VALIDATED_DEPTH}`
    for (const depth of [MAX_VALIDATED_DEPTH + 1, 4_500, 5_000, 9_999]) expect(verdict(nested(depth)), String(depth)).to.equal(expected)
  })

  it('refuses a schema nested deeper than the limit when it is defined, as a 400', () => {
    const deep = '{"items":'.repeat(MAX_VALIDATED_DEPTH) + '{}' + '}'.repeat(MAX_VALIDATED_DEPTH)
    expect(() => compileSchema(deep)).to.throw(ParleyError, /nests deeper than 512|exceeded max depth/)
  })

  it('measures depth outside strings only, without recursion', () => {
    expect(nestsDeeperThan(String.raw`{"a":"[[[[[[","b":[1,{"c":"\"["}]}`, 3)).to.equal(false)
    expect(nestsDeeperThan('{"a":[[1]]}', 2)).to.equal(true)
    expect(nestsDeeperThan(nested(200_000), 100_000)).to.equal(true)
  })
})
