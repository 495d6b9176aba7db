import { expect } from 'chai'
import { StepMeter } from '../../../../node/data/validation-budget.js'
import { compileDatatypeSchema } from '../../../../node/data/validation-schema.js'
import { canonicalJson, firstDuplicate } from '../../../../node/data/validation-unique-items.js'

/** `uniqueItems` in linear time, with JSON Schema's equality: what Ajv's pairwise comparison decided, without its cost. */
describe('validation: uniqueItems', () => {
  const same = (a: string, b: string): boolean => canonicalJson(JSON.parse(a)) === canonicalJson(JSON.parse(b))

  it('treats values as equal exactly when JSON Schema does', () => {
    const equal: [string, string][] = [
      ['{"a":1,"b":{"c":[1,{"d":2,"e":3}],"f":null}}', '{"b":{"f":null,"c":[1,{"e":3,"d":2}]},"a":1}'],
      ['1', '1.0'],
      ['1', '1e0'],
      ['100', '1E2'],
      ['0', '-0'],
      ['0.5', '5e-1'],
      ['[]', '[ ]'],
      ['{}', '{ }'],
      ['"a\\u0062"', '"ab"'],
      ['{"a":1,"a":2}', '{"a":2}'],
    ]
    for (const [a, b] of equal) expect(same(a, b), `${a} = ${b}`).to.equal(true)
    const different: [string, string][] = [
      ['1', '"1"'],
      ['[1,2]', '[2,1]'],
      ['[1]', '[[1]]'],
      ['null', 'false'],
      ['true', 'false'],
      ['true', '"true"'],
      ['null', '"null"'],
      ['0', 'false'],
      ['""', 'null'],
      ['{}', '[]'],
      ['{"a":1}', '{"a":1,"b":1}'],
      ['{"a":null}', '{}'],
      ['{"a":"1"}', '{"a":1}'],
      ['["a,b"]', '["a","b"]'],
      ['{"a,b":1}', '{"a":1,"b":1}'],
      ['1.5', '1.50001'],
    ]
    for (const [a, b] of different) expect(same(a, b), `${a} ≠ ${b}`).to.equal(false)
  })

  it('finds the first repeated item, later against earlier, charging the meter per item', () => {
    const meter = new StepMeter()
    expect(firstDuplicate([1, 'x', { a: [1, 2] }, null, { a: [1, 2.0] }], meter)).to.deep.equal([2, 4])
    expect(meter.steps).to.be.greaterThan(0)
    expect(firstDuplicate([[1, 2], [2, 1], true, 'true', false, 0, null, {}], new StepMeter())).to.equal(undefined)
  })

  it('replaces Ajv\'s keyword in compiled schemas, with Ajv\'s wording', () => {
    const schema = compileDatatypeSchema('{"type":"array","uniqueItems":true}')
    expect(schema.check('[{"a":1,"b":2},{"b":2,"a":1.0}]').problem).to.equal('(root) must NOT have duplicate items (items ## 1 and 0 are identical)')
    expect(schema.check('[{"a":1,"b":2},{"b":2,"a":"1"}]').problem).to.equal(undefined)
    expect(schema.check('[1,"1",[1],{"1":1},true,null]').problem).to.equal(undefined)
    expect(schema.check('[null,false,null]').problem).to.match(/items ## 2 and 0 are identical/)
    expect(compileDatatypeSchema('{"type":"array","uniqueItems":false}').check('[1,1]').problem).to.equal(undefined)
    // Nested, and beside other keywords.
    const nested = compileDatatypeSchema('{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"uniqueItems":true}}}')
    expect(nested.check('{"tags":["a","b","a"]}').problem).to.equal('/tags must NOT have duplicate items (items ## 2 and 0 are identical)')
    expect(nested.check('{"tags":["a","b"]}').problem).to.equal(undefined)
  })

  it('checks 20,000 distinct objects (the audit\'s 229 KB that held members for half a minute) in a bounded number of steps', () => {
    const schema = compileDatatypeSchema('{"type":"array","uniqueItems":true}')
    const items = JSON.stringify(Array.from({ length: 20_000 }, (_, i) => ({ id: i })))
    const first = schema.check(items)
    expect(first.problem).to.equal(undefined)
    // Linear: about ten steps an item, the same count every time.
    expect(first.steps).to.be.below(20 * 20_000)
    expect(schema.check(items).steps).to.equal(first.steps)
    const dup = JSON.stringify([...Array.from({ length: 20_000 }, (_, i) => ({ id: i })), { id: 7 }])
    expect(schema.check(dup).problem).to.equal('(root) must NOT have duplicate items (items ## 20000 and 7 are identical)')
  })
})
