import { expect } from 'chai'
import { wholeBatches } from '../../../../node/aggregator/walk.js'
import type { Pin } from '../../../../node/model/index.js'

/** Pins of the given batches, one run per [batch, count], with consecutive sequences. */
function pins(...runs: [string, number][]): Pin[] {
  const out: Pin[] = []
  for (const [batchId, count] of runs) {
    for (let i = 0; i < count; i++) out.push({ seq: out.length + 1, batchId, index: i } as unknown as Pin)
  }
  return out
}

describe('wholeBatches (where an aggregator page ends)', () => {
  it('keeps a page that is not full: nothing follows it yet', () => {
    const page = pins(['a', 3], ['b', 2])
    expect(wholeBatches(page, 10)).to.equal(page)
  })

  it('leaves out the pins of the batch a full page ends inside', () => {
    const page = pins(['a', 3], ['b', 4], ['c', 3])
    expect(wholeBatches(page, 10).map((p) => p.batchId)).to.deep.equal(['a', 'a', 'a', 'b', 'b', 'b', 'b'])
  })

  it('keeps a full page that one batch fills alone, so that the aggregator moves on', () => {
    const page = pins(['a', 10])
    expect(wholeBatches(page, 10)).to.equal(page)
  })
})
