import { expect } from 'chai'
import { extend } from '../../../../node/core/extend.js'

/** extend stands for a spread: its result must be indistinguishable from `{ ...base, ...extra }`, key order included. */
describe('extend', () => {
  const same = (a: object, b: object): void => {
    expect(Object.keys(a)).to.deep.equal(Object.keys(b))
    expect(JSON.stringify(a)).to.equal(JSON.stringify(b))
    expect(a).to.deep.equal(b)
  }

  it('answers what a spread answers: new keys last, replaced keys in their place, undefined values kept', () => {
    const message = { header: { id: 'm1', topics: ['a'] }, hash: 'h', state: 'pending', data: [{ id: 'd', hash: 'x' }], pins: ['p'] }
    same(extend(message, { state: 'confirmed', confirmed: 't', batch: 'b', txid: 'x' }), { ...message, state: 'confirmed', confirmed: 't', batch: 'b', txid: 'x' })
    same(extend(message, { extra: undefined }), { ...message, extra: undefined })
    same(extend({}, { a: 1 }), { a: 1 })
    same(extend({ a: 1, b: 2 }, {}), { a: 1, b: 2 })
    const event = { type: 'message_confirmed', namespace: 'default', reference: 'r', tx: 't', topic: 'x', correlator: 'c' }
    same(extend(event, { id: 'e', created: 'now', sequence: 0 }), { ...event, id: 'e', created: 'now', sequence: 0 })
  })

  it('copies: the base is left as it was, nested values are shared as a spread shares them', () => {
    const base = { a: 1, nested: { b: 2 } }
    const out = extend(base, { a: 3 })
    expect(base).to.deep.equal({ a: 1, nested: { b: 2 } })
    expect(out.nested).to.equal(base.nested)
  })
})
