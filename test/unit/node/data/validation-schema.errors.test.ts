import { expect } from 'chai'
import type { ErrorObject } from 'ajv'
import { ParleyError } from '../../../../node/core/errors.js'
import { compileDatatypeSchema, compileSchema, summarizeErrors } from '../../../../node/data/validation-schema.js'

function problemOf(f: () => unknown): string {
  try {
    f()
  } catch (err) {
    expect(err).to.be.instanceOf(ParleyError)
    return `${(err as ParleyError).code}: ${(err as ParleyError).message}`
  }
  return 'compiled'
}

const error = (over: Partial<ErrorObject>): ErrorObject => ({ keyword: 'type', instancePath: '/a', schemaPath: '#', params: {}, message: 'must be string', ...over }) as ErrorObject

describe('datatype schemas: what a refusal and a failed check say', () => {
  it('refuses a schema that is not JSON, not an object, or does not compile, with the reason', () => {
    expect(problemOf(() => compileSchema('{"type":'))).to.match(/^INVALID_FIELD: datatype value is not JSON \(or nests deeper than \d+\): /)
    expect(problemOf(() => compileSchema('[{"type":"string"}]'))).to.equal('INVALID_FIELD: datatype value must be a JSON Schema object')
    expect(problemOf(() => compileSchema('{"$ref":"#/$defs/missing"}'))).to.match(/^INVALID_FIELD: datatype value does not compile as a JSON Schema: can't resolve reference #\/\$defs\/missing/)
  })

  it('says a value that is not JSON is not, at no cost', () => {
    expect(compileDatatypeSchema('{"type":"object"}').check('{"a":')).to.deep.equal({ problem: 'the value is not JSON', steps: 0 })
  })

  it('names every problem of a failing value, though its verdict stopped at the first', () => {
    const schema = compileDatatypeSchema('{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"size":{"type":"integer","minimum":1}},"additionalProperties":false}')
    const { problem, steps } = schema.check('{"size":0,"extra":true}')
    expect(problem).to.equal(`(root) must have required property 'name'; (root) must NOT have additional properties: "extra"; /size must be >= 1`)
    expect(steps).to.be.above(0)
    expect(schema.check('{"name":"w","size":2}').problem).to.equal(undefined)
  })

  it('summarises no errors as not conforming, and bounds the list and each list of allowed values', () => {
    expect(summarizeErrors(null)).to.equal('the value does not conform')
    expect(summarizeErrors([])).to.equal('the value does not conform')
    const many = Array.from({ length: 25 }, (_, i) => error({ instancePath: `/${i}` }))
    const text = summarizeErrors(many)
    expect(text.split('; ')).to.have.length(21)
    expect(text.endsWith('; and 5 more')).to.equal(true)
    const wide = summarizeErrors([error({ keyword: 'enum', instancePath: '', message: 'must be equal to one of the allowed values', params: { allowedValues: Array.from({ length: 100 }, (_, i) => `value${i}`) } })])
    expect(wide).to.match(/^\(root\) must be equal to one of the allowed values: \["value0",.*…$/)
    expect(wide.length).to.equal('(root) must be equal to one of the allowed values: '.length + 200)
    const long = summarizeErrors(Array.from({ length: 20 }, (_, i) => error({ instancePath: `/${'p'.repeat(150)}${i}` })))
    expect(long).to.have.length(2000)
    expect(long.endsWith('…')).to.equal(true)
  })

  it('names the property or value a keyword is about, and the keyword when Ajv gives no message', () => {
    expect(summarizeErrors([error({ keyword: 'unevaluatedProperties', instancePath: '', message: 'must NOT have unevaluated properties', params: { unevaluatedProperty: 'x' } })])).to.equal('(root) must NOT have unevaluated properties: "x"')
    expect(summarizeErrors([error({ keyword: 'const', message: 'must be equal to constant', params: { allowedValue: 'on' } })])).to.equal('/a must be equal to constant: "on"')
    expect(summarizeErrors([error({ keyword: 'const', message: 'must be equal to constant', params: { allowedValue: 'x'.repeat(300) } })])).to.equal(`/a must be equal to constant: "${'x'.repeat(198)}…`)
    expect(summarizeErrors([error({ keyword: 'const', message: 'must be equal to constant', params: { allowedValue: undefined } })])).to.equal('/a must be equal to constant: undefined')
    expect(summarizeErrors([error({ keyword: 'maxLength', message: undefined })])).to.equal('/a maxLength')
  })

  it('reads unevaluatedProperties in a 2020-12 schema through to the words of the check', () => {
    const schema = compileDatatypeSchema('{"type":"object","properties":{"a":{}},"unevaluatedProperties":false}')
    expect(schema.check('{"a":1,"b":2}').problem).to.equal('(root) must NOT have unevaluated properties: "b"')
  })
})
