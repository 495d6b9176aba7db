import { expect } from 'chai'
import { RE2JS } from 're2js'
import { regexProgramSize } from '../../node/core/regex-size.js'

/** The program re2js compiles the pattern to: what the estimate bounds. */
function compiledSize(pattern: string): number {
  const compiled = RE2JS.compile(pattern) as unknown as { re2Input: { prog: { numInst(): number } } }
  return compiled.re2Input.prog.numInst()
}

describe('regexProgramSize: the RE2 program a pattern compiles to, read from its text', () => {
  const patterns = [
    'a',
    '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
    '^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$',
    '^.{0,1000}$',
    '[a-z]{1000}',
    '(a|bc|d){1000}',
    '(?:x{30}){30}',
    '(a(b(c){2}){3}){4}',
    '\\pL{1000}',
    '\\p{Greek}{10}\\x{41}{10}',
    '(?i)ab[c-e]{1000}',
    '(?i:ab)|cd',
    'a*b+c?d*?',
    '\\Qa.b{}\\E{3}',
    '[]a]{5}[^]a[:alpha:]]x',
    'x{3,}y{2,5}z{,3}',
    '(?P<n>a|b)+(?<m>c)',
    '[a-z0-9:/-]?'.repeat(1000),
  ]

  it('is never below what re2js compiles, and equal to it where RE2 simplifies nothing away', () => {
    for (const p of patterns) {
      const real = compiledSize(p)
      const estimate = regexProgramSize(p)
      expect(estimate, p).to.be.at.least(real)
      expect(estimate, p).to.be.at.most(real * 2 + 2)
    }
    expect(regexProgramSize('[a-z]{1000}')).to.equal(compiledSize('[a-z]{1000}'))
    expect(regexProgramSize('(a|bc|d){1000}')).to.equal(8002)
  })

  it('multiplies nested repeats and saturates far past any limit instead of overflowing', () => {
    expect(regexProgramSize('(((((a{1000}){1000}){1000}){1000}){1000})')).to.equal(2 ** 40)
    expect(regexProgramSize('(a{1000}){1000}')).to.be.above(1_000_000)
  })

  it('gives malformed text a figure too (re2js refuses it when it compiles)', () => {
    for (const p of ['(', ')', '[', '(?', '\\', 'a{', 'a{2,', '(?i', '\\Qabc', '[[:alpha:', '(a|']) expect(regexProgramSize(p), p).to.be.a('number').and.at.least(2)
  })
})
