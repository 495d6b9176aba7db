import { expect } from 'chai'
import { formatTimestamp, isTimestamp, now, timestampSortKey } from '../../../../node/core/time.js'

describe('timestamps as Go writes them', () => {
  it('writes no fraction for a whole second and trims trailing zeros of the rest', () => {
    const second = Date.UTC(2024, 0, 2, 3, 4, 5)
    expect(formatTimestamp(second)).to.equal('2024-01-02T03:04:05Z')
    expect(formatTimestamp(second + 120)).to.equal('2024-01-02T03:04:05.12Z')
    expect(formatTimestamp(second, 7)).to.equal('2024-01-02T03:04:05.000000007Z')
    // The next second after one reused from the cache.
    expect(formatTimestamp(second + 1000)).to.equal('2024-01-02T03:04:06Z')
  })

  it('writes an instant before 1970 with its fraction counted forward from the second', () => {
    expect(formatTimestamp(-1)).to.equal('1969-12-31T23:59:59.999Z')
  })

  it('orders two calls in the same millisecond by a nanosecond counter', () => {
    const seen = Array.from({ length: 50 }, () => now())
    const keys = seen.map(timestampSortKey)
    expect([...keys].sort()).to.deep.equal(keys)
    expect(new Set(seen).size).to.equal(seen.length)
  })

  it('sorts the trimmed form as the instant does, and refuses what is not a UTC timestamp', () => {
    expect(timestampSortKey('2024-01-02T03:04:05Z')).to.equal('2024-01-02T03:04:05.000000000Z')
    expect(timestampSortKey('2024-01-02T03:04:05.12Z') > timestampSortKey('2024-01-02T03:04:05.012Z')).to.equal(true)
    expect(() => timestampSortKey('2024-01-02T03:04:05+01:00')).to.throw(/not a UTC RFC3339 timestamp: 2024-01-02T03:04:05\+01:00/)
    expect(isTimestamp('2024-01-02T03:04:05.1Z')).to.equal(true)
    expect(isTimestamp('2024-01-02 03:04:05Z')).to.equal(false)
    expect(isTimestamp(0)).to.equal(false)
  })
})
