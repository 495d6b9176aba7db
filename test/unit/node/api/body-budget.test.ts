import { expect } from 'chai'
import { BodyBudget } from '../../../../node/api/body-budget.js'

describe('the body budget', () => {
  it('gives each address at most its share, and the member at most its whole', () => {
    const budget = new BodyBudget(100, 60)
    expect(budget.take('a', 50)).to.equal(undefined)
    expect(budget.take('a', 20)?.message).to.match(/^requests from a already hold 50 bytes .* at most 60 from one address \(limits.addressBodyBytes\)/)
    expect(budget.take('a', 10)).to.equal(undefined)
    expect(budget.take('b', 45)?.message).to.match(/^this member is already reading 60 bytes .* at most 100 at once \(limits.inFlightBodyBytes\)/)
    expect(budget.take('b', 40)).to.equal(undefined)
    expect([budget.held, budget.heldBy('a'), budget.heldBy('b')]).to.deep.equal([100, 60, 40])
  })

  it('takes nothing on a refusal, and frees an address once all it held is given back', () => {
    const budget = new BodyBudget(100, 60)
    budget.take('a', 60)
    expect(budget.take('a', 1)?.code).to.equal('TOO_MANY_REQUESTS')
    expect([budget.held, budget.heldBy('a')]).to.deep.equal([60, 60])
    budget.give('a', 25)
    expect(budget.take('a', 25)).to.equal(undefined)
    budget.give('a', 60)
    expect([budget.held, budget.heldBy('a')]).to.deep.equal([0, 0])
    expect(budget.take('b', 60)).to.equal(undefined)
  })
})

describe('the body budget: stalled bodies give way', () => {
  const reader = (address: string, evicted: string[], name: string) => {
    const r = {
      address,
      lastChunkAt: 0,
      evict(err: Error) {
        evicted.push(`${name}: ${err.message}`)
      },
    }
    return r
  }

  it('evicts, oldest first, bodies of the same address that did not progress for bodyStalledMs, when a body is refused for their share', () => {
    let clock = 0
    const budget = new BodyBudget(1000, 60, 100, () => clock)
    const evicted: string[] = []
    const [a1, a2, a3] = [reader('a', evicted, 'a1'), reader('a', evicted, 'a2'), reader('a', evicted, 'a3')]
    const give = (r: typeof a1, n: number) => (r.evict = (err) => (evicted.push(`${r === a1 ? 'a1' : 'a2'}: ${err.message}`), budget.give('a', n)))
    give(a1, 25)
    give(a2, 25)
    for (const r of [a1, a2, a3]) budget.startReading(r)
    expect(budget.take('a', 25, a1)).to.equal(undefined)
    clock = 10
    expect(budget.take('a', 25, a2)).to.equal(undefined)
    clock = 105
    // Neither has progressed (64 KiB) since it began, 105 ms ago: the first to begin gives way, and that is enough.
    expect(budget.take('a', 30, a3)).to.equal(undefined)
    expect(evicted).to.have.length(1)
    expect(evicted[0]).to.match(/^a1: the request body sent less than 65536 bytes in 100 ms while other bodies needed the budget it held \(limits\.bodyStalledMs\)$/)
    expect([budget.held, budget.heldBy('a')]).to.deep.equal([55, 55])
  })

  it('counts a body as progressing only per 64 KiB that arrive: a byte now and then does not keep it from giving way', () => {
    let clock = 0
    const budget = new BodyBudget(1 << 30, 300 * 1024, 100, () => clock)
    const evicted: string[] = []
    const trickler = reader('a', evicted, 'trickler')
    trickler.evict = (err) => (evicted.push(err.message), budget.give('a', 200 * 1024 + 99))
    budget.startReading(trickler)
    expect(budget.take('a', 200 * 1024, trickler)).to.equal(undefined)
    // A byte every 50 ms: fresh by the clock, but not progress.
    for (let i = 0; i < 99; i++) {
      clock += 50
      expect(budget.take('a', 1, trickler)).to.equal(undefined)
    }
    expect(budget.take('a', 150 * 1024)).to.equal(undefined)
    expect(evicted).to.have.length(1)
  })

  it('never evicts a body still arriving, the asking body itself, a body no longer being read, nor another address for its own share', () => {
    let clock = 0
    const budget = new BodyBudget(100, 60, 100, () => clock)
    const evicted: string[] = []
    const a = reader('a', evicted, 'a')
    const b = reader('b', evicted, 'b')
    const done = reader('a', evicted, 'done')
    budget.startReading(a)
    budget.startReading(b)
    budget.startReading(done)
    expect(budget.take('a', 30, a)).to.equal(undefined)
    expect(budget.take('a', 30, done)).to.equal(undefined)
    budget.stopReading(done)
    expect(budget.take('b', 40, b)).to.equal(undefined)
    clock = 500
    // a's own share is full: b is another address, `done` is whole, and a is the one asking.
    expect(budget.take('a', 10, a)?.code).to.equal('TOO_MANY_REQUESTS')
    // The member's whole is full for c: any stalled body may give way (none sent 64 KiB since it began), the one
    // that progressed longest ago first, until c fits.
    b.evict = (err) => (evicted.push(`b: ${err.message}`), budget.give('b', 40))
    a.evict = (err) => (evicted.push(`a: ${err.message}`), budget.give('a', 30))
    expect(budget.take('c', 30)).to.equal(undefined)
    expect(evicted.map((e) => e.split(':')[0])).to.deep.equal(['a'])
    expect([budget.held, budget.heldBy('a'), budget.heldBy('b'), budget.heldBy('c')]).to.deep.equal([100, 30, 40, 30])
  })
})
