import { expect } from 'chai'
import { Backoff, sleep } from '../../../../node/core/backoff.js'

describe('backoff between tries', () => {
  it('doubles the wait up to the cap, and starts again from the shortest after a success', () => {
    const b = new Backoff(100, 500)
    expect([b.next(), b.next(), b.next(), b.next(), b.next()]).to.deep.equal([100, 200, 400, 500, 500])
    b.reset()
    expect(b.next()).to.equal(100)
  })

  it('calls a failure news only when its reason changed, and retrying until a success', () => {
    const b = new Backoff(1, 2)
    expect(b.retrying).to.equal(false)
    expect(b.failed('ECONNREFUSED')).to.equal(true)
    expect(b.failed('ECONNREFUSED')).to.equal(false)
    expect(b.failed('timeout')).to.equal(true)
    expect(b.retrying).to.equal(true)
    b.reset()
    expect(b.retrying).to.equal(false)
    expect(b.failed('timeout')).to.equal(true)
  })

  it('sleeps until an abort rather than the whole wait, and not at all when already aborted', async () => {
    const early = new AbortController()
    early.abort()
    let woke = false
    await sleep(3_600_000, early.signal).then(() => (woke = true))
    expect(woke).to.equal(true)

    const later = new AbortController()
    const sleeping = sleep(3_600_000, later.signal).then(() => 'woke')
    const first = await Promise.race([sleeping, sleep(5).then(() => 'still asleep')])
    expect(first).to.equal('still asleep')
    later.abort()
    expect(await sleeping).to.equal('woke')
    expect(await sleep(1).then(() => 'slept')).to.equal('slept')
  })
})
