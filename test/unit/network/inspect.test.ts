import { expect } from 'chai'
import { pinnedByItsKey } from '../../../network/inspect.js'

describe('network/inspect: which batch of an id is the real one', () => {
  const pins = [
    { batch: 'b1', signer: '0xsquat', batchHash: 'junk' },
    { batch: 'b1', signer: '0xowner', batchHash: 'h1' },
  ]

  it('the batch pinned by its own key with its own hash (key compared in lowercase)', () => {
    expect(pinnedByItsKey(pins, { id: 'b1', key: '0xOWNER', hash: 'h1' })).to.equal(true)
  })

  it('not one whose key pinned another hash, nor one of another key under the id, nor one without a key', () => {
    expect(pinnedByItsKey(pins, { id: 'b1', key: '0xowner', hash: 'h2' })).to.equal(false)
    expect(pinnedByItsKey(pins, { id: 'b1', key: '0xother', hash: 'h1' })).to.equal(false)
    expect(pinnedByItsKey(pins, { id: 'b2', key: '0xowner', hash: 'h1' })).to.equal(false)
    expect(pinnedByItsKey(pins, { id: 'b1', hash: 'h1' })).to.equal(false)
  })
})
