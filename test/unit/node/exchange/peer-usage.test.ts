import { expect } from 'chai'
import { isParleyError } from '../../../../node/core/errors.js'
import { PeerUsage, type InFlightTicket } from '../../../../node/exchange/peer-usage.js'

describe('exchange: what each peer org has in flight', () => {
  const ticket = (t: InFlightTicket | string): InFlightTicket => {
    if (typeof t === 'string') throw new Error(t)
    return t
  }

  it('counts requests per org whatever node sends them; a released ticket gives its place back', () => {
    const usage = new PeerUsage({ requestsPerOrg: 2, batchBytesPerOrg: 100 })
    const one = ticket(usage.admit('org0', 'node-a'))
    ticket(usage.admit('org0', 'node-b'))
    expect(usage.admit('org0', 'node-b')).to.match(/^TOO_MANY_REQUESTS: org org0 already has 2 requests .*\(this one from node-b\).*\(quotas.inFlightRequestsPerOrg\)$/)
    ticket(usage.admit('org1', 'node-c'))
    one.release()
    one.release()
    expect(usage.of('org0').requests).to.equal(1)
    ticket(usage.admit('org0', 'node-a'))
  })

  it('holds batch bytes as they are taken, refuses past the org share naming it, and frees them on release', () => {
    const usage = new PeerUsage({ requestsPerOrg: 10, batchBytesPerOrg: 100 })
    const a = ticket(usage.admit('org0', 'node-a'))
    const b = ticket(usage.admit('org0', 'node-b'))
    a.take(60)
    expect(b.refusal(50)?.message).to.match(/60 bytes of batches in flight .*50 more would pass 100 \(quotas.inFlightBatchBytesPerOrg\)/)
    b.take(40)
    let err: unknown
    try {
      b.take(1)
    } catch (e) {
      err = e
    }
    expect(isParleyError(err, 'TOO_MANY_REQUESTS')).to.equal(true)
    a.release()
    expect(usage.of('org0')).to.deep.equal({ requests: 1, bytes: 40 })
    b.take(60)
    b.release()
    expect(usage.of('org0')).to.deep.equal({ requests: 0, bytes: 0 })
  })

  it('holds nothing for a ticket once released: a late take and a second release change no count', () => {
    const usage = new PeerUsage({ requestsPerOrg: 10, batchBytesPerOrg: 100 })
    const late = ticket(usage.admit('org0', 'node-a'))
    const live = ticket(usage.admit('org0', 'node-b'))
    live.take(30)
    late.release()
    late.take(500)
    late.release()
    expect(usage.of('org0')).to.deep.equal({ requests: 1, bytes: 30 })
  })
})
