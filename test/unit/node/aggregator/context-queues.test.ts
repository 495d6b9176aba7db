import { expect } from 'chai'
import { ContextQueues } from '../../../../node/aggregator/context-queues.js'

/** The waiting pins per context, in chain order: which pin holds a context, and what leaving (from anywhere) changes. */
describe('aggregator: the waiting pins of each context', () => {
  it('holds each context by its first waiting pin, and ignores a pin read again', () => {
    const q = new ContextQueues<string>()
    q.add(1, 'a')
    q.add(2, 'b')
    q.add(3, 'a')
    // A rewind reads pins again: nothing changes.
    q.add(2, 'b')
    q.add(3, 'a')
    expect(q.size).to.equal(3)
    expect([q.first('a'), q.first('b'), q.first('c')]).to.deep.equal([1, 2, undefined])
    expect([q.earlierWaiting('a', 3), q.earlierWaiting('a', 1), q.earlierWaiting('b', 5), q.earlierWaiting('c', 9)]).to.deep.equal([true, false, true, false])
  })

  it('lets a pin leave from the middle: the head skips it once the pins before it leave too', () => {
    const q = new ContextQueues<string>()
    for (const seq of [1, 2, 3]) q.add(seq, 'a')
    q.leave(2, 'a')
    expect(q.first('a')).to.equal(1)
    expect(q.size).to.equal(2)
    q.leave(1, 'a')
    expect(q.first('a')).to.equal(3)
    expect(q.earlierWaiting('a', 3)).to.equal(false)
    q.leave(3, 'a')
    expect([q.first('a'), q.size]).to.deep.equal([undefined, 0])
  })

  it('ignores a pin leaving that was never queued: another context, or one not read yet', () => {
    const q = new ContextQueues<string>()
    q.add(1, 'a')
    q.leave(1, 'b')
    // Not read yet (past the newest seen): never queued, so nothing is recorded, and it is queued when read.
    q.leave(5, 'a')
    q.add(5, 'a')
    expect(q.size).to.equal(2)
    q.leave(1, 'a')
    expect(q.first('a')).to.equal(5)
  })

  it('starts again from the waiting pins it is given', () => {
    const q = new ContextQueues<string>()
    for (const seq of [1, 2, 3]) q.add(seq, 'a')
    q.leave(2, 'a')
    q.reset([{ seq: 2, hash: 'a' }, { seq: 7, hash: 'b' }])
    expect([q.first('a'), q.first('b'), q.size]).to.deep.equal([2, 7, 2])
    // Older sequences than the newest given are taken as read already.
    q.add(6, 'c')
    expect(q.first('c')).to.equal(undefined)
  })

  it('answers the same after a long-lived context drops the pins it consumed', () => {
    const q = new ContextQueues<string>()
    const n = 3000
    for (let seq = 1; seq <= n; seq++) q.add(seq, 'a')
    for (let seq = 1; seq <= 2000; seq++) {
      q.leave(seq, 'a')
      expect(q.first('a')).to.equal(seq + 1)
    }
    expect(q.size).to.equal(n - 2000)
    q.leave(2500, 'a')
    q.leave(2001, 'a')
    expect([q.first('a'), q.size, q.earlierWaiting('a', 2002), q.earlierWaiting('a', 2003)]).to.deep.equal([2002, n - 2002, false, true])
  })
})
