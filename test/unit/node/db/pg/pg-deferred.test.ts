import { expect } from 'chai'
import { DeferredSteps } from '../../../../../node/db/pg/pg-deferred.js'
import { BEGIN, RELEASE, SAVEPOINT } from '../../../../../node/db/pg/pg-tick.js'

const write = (n: number): { text: string; values: unknown[]; name: string } => ({ text: 'INSERT INTO t (a) VALUES ($1)', values: [n], name: 'parley_1' })

describe('DeferredSteps: what waits for the next round trip', () => {
  it('groups what a function deferred, in a savepoint of its own, and ends the group with its RELEASE', () => {
    const d = new DeferredSteps()
    d.push(BEGIN)
    const first = d.mark()
    d.push(SAVEPOINT)
    d.queue(write(1))
    expect(d.onlyQueuedSince(first)).to.equal(true)
    const g1 = d.group(first)
    const second = d.mark()
    d.push(SAVEPOINT)
    d.queue(write(2))
    const g2 = d.group(second)
    expect(g2).to.not.equal(g1)
    expect(d.queued).to.equal(2)
    expect(d.take([])).to.deep.equal([
      BEGIN,
      { ...SAVEPOINT, group: g1 },
      { ...write(1), group: g1 },
      RELEASE,
      { ...SAVEPOINT, group: g2 },
      { ...write(2), group: g2 },
      RELEASE,
    ])
    expect(d.queued).to.equal(0)
  })

  it('makes the writes a function queued after its statements went a group inside the savepoint they opened', () => {
    const d = new DeferredSteps()
    d.push(BEGIN)
    const m = d.mark()
    d.push(SAVEPOINT)
    expect(d.take([write(1)])).to.deep.equal([BEGIN, SAVEPOINT, write(1)])
    d.queue(write(2))
    d.queue(write(3))
    expect(d.sentSince(m)).to.equal(true)
    const g = d.tail()
    // No SAVEPOINT of its own: a failing write rolls back to the function's, and the RELEASE after the group ends it.
    expect(d.take([])).to.deep.equal([{ ...write(2), group: g }, { ...write(3), group: g }, RELEASE])
  })

  it('drops what a function deferred when nothing of it was sent, and keeps what came before', () => {
    const d = new DeferredSteps()
    d.push(BEGIN)
    d.queue(write(1))
    const m = d.mark()
    d.push(SAVEPOINT)
    d.queue(write(2))
    expect(d.sentSince(m)).to.equal(false)
    d.dropSince(m)
    expect(d.queued).to.equal(1)
    expect(d.take([RELEASE])).to.deep.equal([BEGIN, write(1), RELEASE])
    expect(d.sentSince(m)).to.equal(true)
    expect(d.onlyQueuedSince(m)).to.equal(false)
  })
})
