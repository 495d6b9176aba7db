import { expect } from 'chai'
import { quotaSweep } from '../../../../node/startup/quota-sweep.js'
import { deferred } from '../../../support/exchange-harness.js'

describe('start-up: the periodic sweep of the quotas', () => {
  it('runs every sweep in turn, one pass at a time; a failing sweep is a line naming the knob and the next still runs', async () => {
    const lines: string[] = []
    const order: string[] = []
    const gate = deferred()
    const sweep = quotaSweep(
      [
        async () => {
          order.push('blobs')
          await gate.promise
          throw new Error('disk gone')
        },
        async () => {
          order.push('batches')
          return 0
        },
      ],
      600_000,
      (l) => lines.push(l),
    )
    const first = sweep.pass()
    const second = sweep.pass()
    expect(second, 'a pass under way is joined, not doubled').to.equal(first)
    gate.resolve()
    await first
    expect(order).to.deep.equal(['blobs', 'batches'])
    expect(lines).to.deep.equal(['quotas: a sweep failed, to be tried again in 600000 ms (quotas.sweepIntervalMs): disk gone'])
    await sweep.pass()
    expect(order).to.deep.equal(['blobs', 'batches', 'blobs', 'batches'])
  })

  it('stop waits for the pass under way', async () => {
    const gate = deferred()
    let done = false
    const sweep = quotaSweep([async () => { await gate.promise; done = true; return 1 }], 600_000, () => {})
    sweep.start()
    void sweep.pass()
    const stopped = sweep.stop()
    gate.resolve()
    await stopped
    expect(done).to.equal(true)
  })
})
