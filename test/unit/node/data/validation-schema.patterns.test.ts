import { expect } from 'chai'
import { ParleyError } from '../../../../node/core/errors.js'
import { compileSchema } from '../../../../node/data/datatype.js'

/** Datatype patterns run on RE2: linear whatever the pattern, the same verdict on every member. */
describe('datatype patterns', () => {
  it('checks a catastrophic-backtracking pattern in linear time, with the right verdict', () => {
    const check = compileSchema('{"type":"string","pattern":"^(a+)+$"}')
    // 33 characters froze a member for 32 s on a JS RegExp; here 100,000 take milliseconds (no timing asserted).
    expect(check('a'.repeat(32) + 'b')).to.equal(false)
    expect(check('a'.repeat(100_000) + 'b')).to.equal(false)
    expect(check('a'.repeat(100_000))).to.equal(true)
  })

  it('keeps each pattern its own (Ajv caches compiled patterns by their text)', () => {
    const check = compileSchema('{"type":"object","properties":{"a":{"type":"string","pattern":"^x+$"},"b":{"type":"string","pattern":"^y+$"}},"patternProperties":{"^z[0-9]$":{"type":"integer"}}}')
    expect(check({ a: 'xx', b: 'yy', z1: 3 })).to.equal(true)
    expect(check({ a: 'yy' })).to.equal(false)
    expect(check({ b: 'xx' })).to.equal(false)
    expect(check({ z1: 'not an integer' })).to.equal(false)
  })

  it('refuses, as a 400, a schema whose pattern RE2 cannot run (a backreference, a lookahead)', () => {
    for (const pattern of ['(a)\\\\1', '^(?=a)a$']) {
      expect(() => compileSchema(`{"type":"string","pattern":"${pattern}"}`), pattern).to.throw(ParleyError, /does not compile/)
    }
  })
})
