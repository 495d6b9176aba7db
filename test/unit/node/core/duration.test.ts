import { expect } from 'chai'
import { readableDuration } from '../../../../node/core/duration.js'

describe('readableDuration', () => {
  it('writes a duration in the largest unit it makes at least one of', () => {
    expect(readableDuration(120_000)).to.equal('2 min')
    expect(readableDuration(86_400_000)).to.equal('24 h')
    expect(readableDuration(5_400_000)).to.equal('1.5 h')
    expect(readableDuration(1500)).to.equal('1.5 s')
    expect(readableDuration(59_999)).to.equal('60 s')
    expect(readableDuration(250)).to.equal('250 ms')
    expect(readableDuration(0)).to.equal('0 ms')
  })
})
