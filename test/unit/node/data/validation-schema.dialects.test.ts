import { expect } from 'chai'
import { ParleyError } from '../../../../node/core/errors.js'
import { ValidationWorker } from '../../../../node/data/validation-offthread.js'
import { compileDatatypeSchema, compileSchema, MAX_SCHEMA_UNITS } from '../../../../node/data/validation-schema.js'
import { schemaVerdict } from '../../../../node/data/validation-verdict.js'
import type { VerdictJob } from '../../../../node/data/validation-worker.js'

const DRAFT_07 = 'http://json-schema.org/draft-07/schema#'
const DRAFT_2019 = 'https://json-schema.org/draft/2019-09/schema'
const schema = (dialect: string | undefined, body: object): string => JSON.stringify(dialect === undefined ? body : { $schema: dialect, ...body })

/** A draft-07 schema using what only draft-07 reads: `definitions`, `dependencies` (both forms) and tuple `items`. */
const DRAFT_07_ORDER = schema(DRAFT_07, {
  definitions: { sku: { type: 'string', pattern: '^[A-Z]{3}-[0-9]+$' } },
  type: 'object',
  properties: {
    line: { type: 'array', items: [{ $ref: '#/definitions/sku' }, { type: 'integer', minimum: 1 }], additionalItems: false },
  },
  dependencies: { discount: ['coupon'], gift: { required: ['message'] } },
})

/** A 2019-09 schema: `$defs`, `dependentRequired`, `dependentSchemas`, and tuple `items` (still an array in 2019-09). */
const DRAFT_2019_ORDER = schema(DRAFT_2019, {
  $defs: { sku: { type: 'string', pattern: '^[A-Z]{3}-[0-9]+$' } },
  type: 'object',
  properties: { line: { type: 'array', items: [{ $ref: '#/$defs/sku' }, { type: 'integer', minimum: 1 }], additionalItems: false } },
  dependentRequired: { discount: ['coupon'] },
  dependentSchemas: { gift: { required: ['message'] } },
})

describe('datatype schemas in draft-07 and 2019-09', () => {
  it('validates a draft-07 schema with draft-07 semantics: definitions, dependencies and tuple items', () => {
    const check = compileSchema(DRAFT_07_ORDER)
    expect(check({ line: ['ABC-12', 3] })).to.equal(true)
    expect(check({ line: ['abc', 3] }), 'a $ref into definitions').to.equal(false)
    expect(check({ line: ['ABC-12', 0] }), 'the second tuple item').to.equal(false)
    expect(check({ line: ['ABC-12', 3, 'extra'] }), 'additionalItems: false').to.equal(false)
    expect(check({ discount: 5 }), 'a property dependency').to.equal(false)
    expect(check({ discount: 5, coupon: 'X' })).to.equal(true)
    expect(check({ gift: true }), 'a schema dependency').to.equal(false)
    expect(check({ gift: true, message: 'hi' })).to.equal(true)
  })

  it('reads 2019-09 keywords in a draft-07 schema as unknown, as draft-07 does', () => {
    const check = compileSchema(schema(DRAFT_07, { dependentRequired: { a: ['b'] }, prefixItems: [{ type: 'string' }] }))
    expect(check({ a: 1 })).to.equal(true)
    expect(check([1])).to.equal(true)
  })

  it('validates a 2019-09 schema with 2019-09 semantics: $defs, dependentRequired, dependentSchemas, tuple items', () => {
    const check = compileSchema(DRAFT_2019_ORDER)
    expect(check({ line: ['ABC-12', 3] })).to.equal(true)
    expect(check({ line: ['abc', 3] })).to.equal(false)
    expect(check({ line: ['ABC-12', 3, 'extra'] })).to.equal(false)
    expect(check({ discount: 5 })).to.equal(false)
    expect(check({ discount: 5, coupon: 'X' })).to.equal(true)
    expect(check({ gift: true })).to.equal(false)
  })

  it('keeps 2020-12 the dialect of a schema without $schema: a tuple `items` array is no 2020-12 schema', () => {
    const tuple = { type: 'array', items: [{ type: 'string' }] }
    expect(() => compileSchema(schema(undefined, tuple))).to.throw(ParleyError, /not a valid JSON Schema \(2020-12\)/)
    expect(compileSchema(schema(DRAFT_07, tuple))(['a', 1])).to.equal(true)
  })

  it('checks a schema against its own dialect\'s meta-schema', () => {
    expect(() => compileSchema(schema(DRAFT_07, { type: 'nope' }))).to.throw(ParleyError, /not a valid JSON Schema \(draft-07\)/)
    expect(() => compileSchema(schema(DRAFT_2019, { dependentRequired: { a: 'b' } }))).to.throw(ParleyError, /not a valid JSON Schema \(2019-09\)/)
  })

  it('refuses an unknown dialect as the caller\'s mistake', () => {
    expect(() => compileSchema(schema('https://example.com/meta', { type: 'string' }))).to.throw(ParleyError, /names no known JSON Schema dialect/)
  })

  it('applies the same bounds in every dialect: patterns on RE2, linear uniqueItems, the unit and step budgets', () => {
    for (const dialect of [DRAFT_07, DRAFT_2019]) {
      // RE2: linear whatever the pattern, and each pattern its own (Ajv caches patterns by their text).
      const patterns = compileSchema(schema(dialect, { type: 'object', properties: { a: { pattern: '^(a+)+$' }, b: { pattern: '^b+$' } } }))
      expect(patterns({ a: 'a'.repeat(100_000) + 'b' }), dialect).to.equal(false)
      expect(patterns({ a: 'aaa', b: 'bb' }), dialect).to.equal(true)
      expect(patterns({ b: 'aaa' }), dialect).to.equal(false)
      expect(() => compileSchema(schema(dialect, { pattern: '(a)\\1' })), dialect).to.throw(ParleyError, /does not compile/)
      const many = Object.fromEntries(Array.from({ length: MAX_SCHEMA_UNITS }, (_, i) => [`p${i}`, { type: 'string' }]))
      expect(() => compileSchema(schema(dialect, { properties: many })), dialect).to.throw(ParleyError, /a schema may have at most/)
      const unique = compileDatatypeSchema(schema(dialect, { type: 'array', uniqueItems: true }))
      const items = Array.from({ length: 20_000 }, (_, i) => ({ i }))
      expect(unique.check(JSON.stringify([...items, { i: 3 }])).problem, dialect).to.match(/duplicate items/)
      // A recursion in `definitions` (draft-07) or `$defs` (2019-09) runs out of steps or stack, never out of time.
      const defs = dialect === DRAFT_07 ? 'definitions' : '$defs'
      const exponential = compileDatatypeSchema(schema(dialect, { [defs]: { n: { type: 'array', anyOf: [{ allOf: [{ items: { $ref: `#/${defs}/n` } }, false] }, { items: { $ref: `#/${defs}/n` } }] } }, $ref: `#/${defs}/n` }))
      const verdict = schemaVerdict({ name: 'dt', version: '1' }, (r) => exponential.check(r), '['.repeat(60) + ']'.repeat(60))
      expect(verdict.failure, dialect).to.match(/needs more than \d+ steps|stack units/)
    }
  })

  it('reaches the same verdicts in the validation worker as inline, in every dialect', async function () {
    this.timeout(60_000)
    const datatype = { name: 'dt', version: '1' }
    const cases: [string, string][] = [
      [DRAFT_07_ORDER, '{"line":["ABC-12",3]}'],
      [DRAFT_07_ORDER, '{"line":["ABC-12",3,4],"gift":1}'],
      [DRAFT_2019_ORDER, '{"discount":1}'],
      [DRAFT_2019_ORDER, '{"line":["ABC-1",2],"discount":1,"coupon":"c"}'],
    ]
    const inline = cases.map(([schemaRaw, valueRaw]) => {
      const compiled = compileDatatypeSchema(schemaRaw)
      return schemaVerdict(datatype, (r) => compiled.check(r), valueRaw)
    })
    expect(inline.map((v) => v.failure === undefined)).to.deep.equal([true, false, false, true])
    const worker = new ValidationWorker()
    try {
      const jobs: VerdictJob[] = cases.map(([schemaRaw, valueRaw]) => ({ schemaRaw, datatype, valueRaw }))
      expect(await worker.run(jobs)).to.deep.equal(inline)
    } finally {
      await worker.stop()
    }
  })
})
