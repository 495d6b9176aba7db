import { expect } from 'chai'
import { LruMap } from '../../../../node/core/lru.js'

describe('LruMap', () => {
  it('drops the least recently used entry past its capacity; a read counts as a use', () => {
    const m = new LruMap<string, number>(2)
    m.set('a', 1)
    m.set('b', 2)
    expect(m.get('a')).to.equal(1)
    m.set('c', 3)
    expect([m.get('a'), m.get('b'), m.get('c')]).to.deep.equal([1, undefined, 3])
    expect(m.size).to.equal(2)
  })

  it('weighs entries: drops as many as it takes, refuses one heavier than the whole, and forgets what is deleted', () => {
    const m = new LruMap<string, string>(10, (v) => v.length)
    m.set('a', 'xxxx')
    m.set('b', 'yyyy')
    m.set('c', 'zzzzzzz')
    expect([m.get('a'), m.get('b'), m.get('c')]).to.deep.equal([undefined, undefined, 'zzzzzzz'])
    expect(m.weight).to.equal(7)
    m.set('d', 'w'.repeat(11))
    expect(m.get('d')).to.equal(undefined)
    expect(m.get('c')).to.equal('zzzzzzz')
    m.set('c', 'zz')
    expect(m.weight).to.equal(2)
    m.delete('c')
    expect([m.size, m.weight]).to.deep.equal([0, 0])
  })
})
