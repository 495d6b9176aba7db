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
