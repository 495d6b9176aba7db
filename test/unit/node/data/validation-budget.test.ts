import { expect } from 'chai'
import { ParleyError } from '../../../../node/core/errors.js'
import { newId, type DataId, type Hash } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { BASE_STEPS, MAX_HELD_FAILURES, MAX_STACK_UNITS, STEPS_PER_CHAR, stepBudget } from '../../../../node/data/validation-budget.js'
import { compileDatatypeSchema, compileSchema } from '../../../../node/data/validation-schema.js'
import { meterSchema, STEPS_KEYWORD } from '../../../../node/data/validation-steps.js'
import { schemaVerdict } from '../../../../node/data/validation-verdict.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import type { Data } from '../../../../node/model/index.js'

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth)
const dt = { name: 'd', version: '1' }
/**
 * At each level the first alternative descends the whole value before it fails, and the second descends it again:
 * 2^depth evaluations.
 */
const EXPONENTIAL = '{"$defs":{"n":{"type":"array","anyOf":[{"allOf":[{"items":{"$ref":"#/$defs/n"}},false]},{"items":{"$ref":"#/$defs/n"}}]}},"$ref":"#/$defs/n"}'

/** One validation's work is counted in steps the same way everywhere, and stops at a budget that grows with the value. */
describe('validation: the step budget', () => {
  it('counts the same steps for the same schema and value, in one compiled schema or another', () => {
    const raw = '{"type":"array","items":{"anyOf":[{"type":"string","pattern":"^a+$"},{"type":"object","required":["k"],"properties":{"k":{"enum":[1,2,3]}}}]}}'
    const value = JSON.stringify(Array.from({ length: 500 }, (_, i) => (i % 2 ? 'a'.repeat(i) : { k: (i % 3) + 1 })))
    const a = compileDatatypeSchema(raw)
    const b = compileDatatypeSchema(raw)
    const runs = [a.check(value), a.check(value), b.check(value)]
    expect(runs.map((r) => r.problem)).to.deep.equal([undefined, undefined, undefined])
    expect(runs[1]!.steps).to.equal(runs[0]!.steps)
    expect(runs[2]!.steps).to.equal(runs[0]!.steps)
    expect(runs[0]!.steps).to.be.greaterThan(500)
  })

  it('grows the budget with the value: a base, so many steps a character, and the schema\'s own weight', () => {
    const schema = compileDatatypeSchema('{"type":"string"}')
    expect(schema.budget('"x"')).to.equal(stepBudget(3, meterSchema({ type: 'string' }).weight))
    expect(stepBudget(1000, 50)).to.equal(BASE_STEPS + 50 + STEPS_PER_CHAR * 1000)
  })

  it('stops an exponential schema fast, with the same budget reason every time', () => {
    const schema = compileDatatypeSchema(EXPONENTIAL)
    const value = nested(60)
    const started = performance.now()
    const first = schemaVerdict(dt, (r) => schema.check(r), value)
    const second = schemaVerdict(dt, (r) => schema.check(r), value)
    expect(performance.now() - started, 'fails fast (no timing asserted beyond a generous bound)').to.be.below(10_000)
    expect(first.failure).to.equal(`validation of this value against datatype d/1 needs more than ${schema.budget(value)} steps, the budget for a value of ${value.length} characters (${BASE_STEPS} + ${STEPS_PER_CHAR} per character + the schema's own weight)`)
    expect(second).to.deep.equal(first)
  })

  it('stops a $ref cycle that never descends into the value at a stack bound, never at a RangeError', () => {
    for (const raw of ['{"anyOf":[{"$ref":"#"}]}', '{"anyOf":[{"$ref":"#"},{"$ref":"#"}],"type":"array","items":{"$ref":"#"}}', '{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"oneOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}']) {
      const schema = compileDatatypeSchema(raw)
      const v = schemaVerdict(dt, (r) => schema.check(r), '[[1]]')
      expect(v.failure, raw).to.match(new RegExp(`nests subschema calls deeper than the ${MAX_STACK_UNITS} stack units a check may hold`))
    }
    // Large subschemas take more of the stack each: still a bound, not an overflow.
    const props = Object.fromEntries(Array.from({ length: 240 }, (_, k) => [`p${k}`, { type: 'string', maxLength: 9 }]))
    const big = compileDatatypeSchema(JSON.stringify({ type: 'object', properties: props, anyOf: [{ $ref: '#' }] }))
    expect(big.check('{"p1":"x"}').problem).to.deep.equal({ kind: 'stack', limit: MAX_STACK_UNITS })
  })

  it('refuses, alike on every member, a schema too large or deep to compile within bounds', () => {
    const props = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, k) => [`p${k}`, { type: 'string', maxLength: 9 }]))
    expect(() => compileDatatypeSchema(JSON.stringify({ type: 'object', properties: props(300) }))).to.throw(/has 120\d subschemas and keywords; a schema may have at most 1000/)
    expect(() => compileDatatypeSchema(JSON.stringify({ type: 'object', description: 'd'.repeat(70_000) }))).to.throw(/datatype value is 700\d\d bytes; a schema may take at most 65536/)
    let deep: unknown = { type: 'string' }
    for (let i = 0; i < 40; i++) deep = { type: 'object', properties: { a: deep } }
    expect(() => compileDatatypeSchema(JSON.stringify(deep))).to.throw(/nests deeper than 64/)
  })

  it('refuses, before compiling them, patterns whose repeats make programs too large; counts each distinct pattern once', () => {
    // Five of these (55 KB of schema, within every other bound) took 7 s to compile, synchronously, on every member.
    const repeated = (k: number) => `${'[a-z]{1000}'.repeat(k)}`
    const schemaOf = (patterns: string[], keys: string[] = []) =>
      JSON.stringify({ type: 'object', properties: Object.fromEntries(patterns.map((p, i) => [`p${i}`, { type: 'string', pattern: p }])), patternProperties: Object.fromEntries(keys.map((k) => [k, { type: 'string' }])) })
    expect(() => compileDatatypeSchema(schemaOf([`${repeated(300)}a`]))).to.throw(/patterns compile to 3000\d{2} RE2 instructions; a schema's patterns may take at most 10000/)
    expect(() => compileDatatypeSchema(schemaOf([repeated(6), `x${repeated(5)}`]))).to.throw(/patterns compile to 1100\d RE2 instructions/)
    // Nor any pattern past 4,096 characters, whatever its program: re2js's parser is quadratic in some texts.
    expect(() => compileDatatypeSchema(schemaOf([`[${'[:'.repeat(2100)}a]`]))).to.throw(/has a pattern of 4203 characters; a pattern may have at most 4096/)
    // patternProperties names are patterns too.
    expect(() => compileDatatypeSchema(schemaOf([repeated(6)], [`^${repeated(5)}$`]))).to.throw(/patterns compile to 1100\d RE2 instructions/)
    // Up to the bound, and the same pattern in many places, compiles (and checks what it should).
    const near = compileDatatypeSchema(schemaOf([...Array(20).fill('^.{0,1000}$'), repeated(7)]))
    expect(near.check(JSON.stringify({ p0: 'x'.repeat(10) })).problem).to.equal(undefined)
    expect(near.check(JSON.stringify({ p20: 'A' })).problem).to.match(/must match pattern/)
  })

  it('counts a pattern\'s steps per character by its compiled program, not its text', () => {
    const stepsFor = (pattern: string) => compileDatatypeSchema(JSON.stringify({ type: 'string', pattern })).check(JSON.stringify('x'.repeat(320))).steps
    // Eleven characters each; RE2 runs a program of 2,004 instructions for the first (up to one step each per character).
    expect(stepsFor('^.{0,1000}$')).to.be.above(40 * stepsFor('^(?:.*)x*$'))
  })

  it('validates the audit\'s recursive schema 512 deep, and refuses 600 deep before checking', () => {
    const schema = compileDatatypeSchema('{"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}},"$ref":"#/$defs/n"}')
    expect(schemaVerdict(dt, (r) => schema.check(r), nested(512)).failure).to.equal(undefined)
    expect(schemaVerdict(dt, (r) => schema.check(r), nested(600)).failure).to.match(/^data nests deeper than 512 levels/)
  })

  it('passes realistic data with a wide margin: 20,000 records under an ordinary schema', () => {
    const raw = JSON.stringify({
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'age'],
        additionalProperties: false,
        properties: {
          id: { type: 'string', format: 'uuid' },
          name: { type: 'string', maxLength: 64 },
          age: { type: 'integer', minimum: 0 },
          email: { type: 'string', format: 'email' },
          tags: { type: 'array', items: { type: 'string' }, uniqueItems: true },
          kind: { enum: ['a', 'b', 'c'] },
        },
      },
    })
    const value = JSON.stringify(Array.from({ length: 20_000 }, (_, i) => ({ id: `3f1c9a2e-0b7d-4c1e-9f3a-${String(i).padStart(12, '0')}`, name: `user ${i}`, age: i % 90, email: `u${i}@example.com`, tags: ['x', 'y'], kind: 'b' })))
    const out = compileDatatypeSchema(raw).check(value)
    expect(out.problem).to.equal(undefined)
    // Under a tenth of the budget.
    expect(out.steps).to.be.below(stepBudget(value.length, 0) / 10)
  })

  it('charges strings read by patterns and formats by their length, and the quadratic `url` format quadratically', () => {
    const pattern = compileDatatypeSchema('{"type":"string","pattern":"^(a+)+$"}')
    const short = pattern.check(JSON.stringify('a'.repeat(100)))
    const long = pattern.check(JSON.stringify('a'.repeat(100_000)))
    expect(long.problem).to.equal(undefined)
    expect(long.steps).to.be.greaterThan(short.steps * 500)
    const url = compileDatatypeSchema('{"type":"string","format":"url"}')
    expect(url.check('"https://example.com/a"').problem).to.equal(undefined)
    expect(url.check(JSON.stringify('http://' + '::'.repeat(50_000))).problem).to.deep.include({ kind: 'steps' })
  })

  it('bounds the failures a run may hold at once, in the collecting code of large schemas', () => {
    // Over 500 units: judged by code that collects every failure, which a failing alternative then holds.
    const props = Object.fromEntries(Array.from({ length: 300 }, (_, k) => [`p${k}`, { type: 'string' }]))
    const raw = JSON.stringify({ properties: props, anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'array', items: { type: 'number' } }] })
    const schema = compileDatatypeSchema(raw)
    expect(schema.check(JSON.stringify(Array.from({ length: 100 }, (_, i) => i))).problem).to.equal(undefined)
    expect(schema.check(JSON.stringify(Array.from({ length: MAX_HELD_FAILURES + 10 }, (_, i) => i))).problem).to.deep.equal({ kind: 'failures', held: MAX_HELD_FAILURES + 1 })
    // A small schema stops at the first failure, and holds next to nothing.
    const small = compileDatatypeSchema('{"anyOf":[{"type":"array","items":{"type":"string"}},{"type":"array","items":{"type":"number"}}]}')
    expect(small.check(JSON.stringify(Array.from({ length: MAX_HELD_FAILURES + 10 }, (_, i) => i))).problem).to.equal(undefined)
  })

  it('annotates every subschema, overwriting a weight a schema gave itself, and leaves data alone', () => {
    const { schema } = meterSchema({ [STEPS_KEYWORD]: [0, 0, 0, 0], properties: { a: { enum: [{ x: 1 }] } }, items: [{ const: { y: {} } }], 'x-custom': { nested: { type: 'string' } } }) as { schema: Record<string, unknown> }
    const s = schema as { [k: string]: unknown; properties: { a: Record<string, unknown> }; 'x-custom': { nested: Record<string, unknown> } }
    expect(s[STEPS_KEYWORD]).to.not.deep.equal([0, 0, 0, 0])
    expect(s.properties.a[STEPS_KEYWORD]).to.be.an('array')
    expect(s.properties.a.enum).to.deep.equal([{ x: 1 }])
    expect(s['x-custom'].nested[STEPS_KEYWORD], 'objects under unknown keywords may be $ref targets').to.be.an('array')
    expect(JSON.stringify((schema.items as Record<string, unknown>[])[0]!.const)).to.equal('{"y":{}}')
    // A keyword named __proto__ stays a member (an unknown keyword), never the copy's prototype.
    const proto = compileDatatypeSchema('{"__proto__":{"type":"string"}}')
    expect(proto.check('1').problem).to.equal(undefined)
  })

  it('refuses, as a 400, a $ref into data (Ajv would compile it as an unmetered schema)', () => {
    const intoData = (schema: unknown) => meterSchema(schema).refIntoData
    expect(intoData({ $ref: '#/enum/0', enum: [{ anyOf: [{ $ref: '#/enum/0' }] }] })).to.match(/points into "enum"/)
    expect(intoData({ $defs: { a: { default: {} } }, $ref: '#/$defs/a/default' })).to.match(/points into "default"/)
    expect(intoData({ $ref: 'urn:x#/%65num/0' })).to.match(/points into "enum"/)
    // A property named like a data keyword is a schema, and a $ref in it is a $ref.
    expect(intoData({ properties: { enum: { $ref: '#/enum/0' } }, enum: [{}] })).to.match(/points into "enum"/)
    expect(intoData({ properties: { enum: { type: 'string' } }, items: { $ref: '#/properties/enum' } })).to.equal(undefined)
    expect(intoData({ enum: [{ $ref: '#/enum/0' }] }), 'a $ref inside data is data').to.equal(undefined)
    expect(() => compileSchema('{"const":{"anyOf":[{"$ref":"#/const"}]},"$ref":"#/const"}')).to.throw(ParleyError, /does not compile.*points into "const"/)
  })

  it('answers SCHEMA_VALIDATION_FAILED naming the datatype and the budget, through the validator', () => {
    const raw = EXPONENTIAL
    const compiled = compileDatatypeSchema(raw)
    const validator = new DataValidatorImpl(() => ({ check: () => undefined, orderedAt: 0, schema: { compiled, raw } }))
    const d: Data = { id: newId<DataId>(), validator: 'json', namespace: 'ns', hash: '00'.repeat(32) as Hash, created: now(), datatype: { name: 'tree', version: '2' }, value: nested(60) }
    expect(() => validator.validate('ns', d)).to.throw(ParleyError, /^validation of this value against datatype tree\/2 needs more than \d+ steps/)
  })
})
