import { expect } from 'chai'
import { validateParams } from '../../../../node/db/journal-record.js'
import type { SqlParams } from '../../../../node/db/types.js'

/** The parameter checks name the parameter they refuse (the name is built only when a check fails). */
describe('statement parameter checks', () => {
  const refused = (params: unknown): string => {
    try {
      validateParams(params as SqlParams)
    } catch (err) {
      return (err as Error).message
    }
    return 'accepted'
  }

  it('accepts what sql.js binds as it is', () => {
    expect(refused([null, 'a', 1, 2n, new Uint8Array(1)])).to.equal('accepted')
    expect(refused({ ':a': null, '@b': 'x', $c: 1 })).to.equal('accepted')
    expect(refused(undefined)).to.equal('accepted')
  })

  it('names a positional parameter by its 1-based position, and a named one by its key', () => {
    expect(refused([1, 'a', undefined])).to.equal('DB_MISUSE: parameter 3 is undefined; bind string, number, bigint, Uint8Array or null')
    expect(refused([true])).to.equal('DB_MISUSE: parameter 1 is boolean; bind string, number, bigint, Uint8Array or null')
    expect(refused({ ':a': 1, ':b': {} })).to.equal('DB_MISUSE: parameter :b is object; bind string, number, bigint, Uint8Array or null')
    expect(refused({ a: 1 })).to.match(/named parameter "a" must include its prefix/)
  })

  it('refuses a hole in a positional list (it would bind nothing there)', () => {
    // eslint-disable-next-line no-sparse-arrays
    expect(refused([1, , 3])).to.equal('DB_MISUSE: parameter 2 is undefined; bind string, number, bigint, Uint8Array or null')
  })
})
