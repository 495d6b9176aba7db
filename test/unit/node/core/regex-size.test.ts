import { expect } from 'chai'
import fc from 'fast-check'
import { RE2JS } from 're2js'
import { regexProgramSize } from '../../../../node/core/regex-size.js'

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
    '(?:[a-z]{1000}){0,}',
    '(?:a|){1000}',
    '(){1000}',
    '',
    '(a*)*',
    '(?:a?){0,}',
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

  it('is never below what re2js compiles, for any pattern of RE2 syntax (property, fixed seed)', () => {
    const atom = fc.constantFrom('a', 'b', '.', '[a-c]', '[^x]', '[]a]', '[[:alpha:]0-9]', '\\d', '\\pL', '\\p{Greek}', '\\x{41}', '\\Qa.\\E', '^', '$', '\\b', '(?i)', '')
    const quantifier = fc.constantFrom('', '', '*', '+', '?', '*?', '+?', '??', '{0}', '{1}', '{3}', '{0,}', '{2,}', '{0,2}', '{1,3}', '{2,2}?')
    const { pattern } = fc.letrec<{ pattern: string; sequence: string; item: string }>((tie) => ({
      pattern: fc.array(tie('sequence'), { minLength: 1, maxLength: 3 }).map((alts) => alts.join('|')),
      sequence: fc.array(tie('item'), { maxLength: 4 }).map((items) => items.join('')),
      item: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.tuple(atom, quantifier).map(([a, q]) => (a === '' || a === '(?i)' ? a : a + q)),
        fc.tuple(fc.constantFrom('(', '(?:', '(?P<n>', '(?i:'), tie('pattern'), quantifier).map(([open, inner, q]) => `${open}${inner})${q}`),
      ),
    }))
    let compiled = 0
    fc.assert(
      fc.property(pattern, (p) => {
        let real: number
        try {
          real = compiledSize(p)
        } catch {
          return // re2js refuses it (a nested repeat past 1,000, a repeated named group...): nothing to bound
        }
        compiled++
        expect(regexProgramSize(p), p).to.be.at.least(real)
      }),
      { seed: 20261128, numRuns: 3000 },
    )
    expect(compiled, 'patterns re2js compiled').to.be.above(1000)
  })

  it('reads a class full of `[:` as one class', () => {
    // Each `[:` used to search the rest of the text for its `:]` (64 KB, the most a schema holds, took 3 s); a class
    // name is looked for within the longest name's reach now.
    expect(regexProgramSize(`[${'[:'.repeat(32_000)}a]`)).to.equal(3)
    expect(regexProgramSize('[[:xdigit:]]x')).to.equal(compiledSize('[[:xdigit:]]x'))
  })

  it('multiplies nested repeats and saturates far past any limit instead of overflowing', () => {
    expect(regexProgramSize('(((((a{1000}){1000}){1000}){1000}){1000})')).to.equal(2 ** 40)
    expect(regexProgramSize('(a{1000}){1000}')).to.be.above(1_000_000)
  })

  it('gives malformed text a figure too (re2js refuses it when it compiles)', () => {
    for (const p of ['(', ')', '[', '(?', '\\', 'a{', 'a{2,', '(?i', '\\Qabc', '[[:alpha:', '(a|', '\\p{Greek', '\\x{41']) expect(regexProgramSize(p), p).to.be.a('number').and.at.least(2)
  })
})
