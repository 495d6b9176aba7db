import { expect } from 'chai'
import type { Hash } from '../../../../node/core/ids.js'
import { StandingQueues, type QueuedPin } from '../../../../node/aggregator/standing.js'

const ORDERS = 'a'.repeat(64) as Hash
const CLAIM = 'c'.repeat(64) as Hash
const MEMBER = '0xmember'
const NEWCOMER = '0xnewcomer'
const STRANGER = '0xstranger'

/** A pin's standing from the chain's order alone: who is registered before it, and which of its signer's pins are undecided. */
describe('aggregator: standing of pins', () => {
  let registered: Map<string, number>
  let queues: StandingQueues
  /** A pin alone in its BatchPin event, unless an event is given. */
  const pin = (seq: number, signer: string, hash: Hash = ORDERS, eventId = `e${seq}`): QueuedPin => ({ seq, hash, signer, eventId })

  beforeEach(() => {
    registered = new Map([[MEMBER, 0]])
    queues = new StandingQueues((signer) => registered.get(signer))
  })

  it('lets a member’s pin hold its topic, and a stranger’s hold only identity claims back', () => {
    queues.add(pin(1, STRANGER))
    expect(queues.standingOf(1)).to.equal('stranger')
    expect(queues.earlierWaiting(ORDERS, 2), 'an ordinary message is not held').to.equal(false)
    expect(queues.earlierWaiting(ORDERS, 2, true), 'an identity claim is').to.equal(true)
    queues.add(pin(2, MEMBER))
    expect(queues.standingOf(2)).to.equal('member')
    expect(queues.earlierWaiting(ORDERS, 3)).to.equal(true)
    expect(queues.first(ORDERS)).to.equal(2)
    expect(queues.first(ORDERS, true)).to.equal(1)
    queues.leave(pin(2, MEMBER))
    expect(queues.earlierWaiting(ORDERS, 3)).to.equal(false)
    expect(queues.size).to.equal(1)
  })

  it('holds a later pin of a signer whose earlier pin is undecided, and makes it a member’s once the claim is confirmed', () => {
    queues.add(pin(1, NEWCOMER, CLAIM))
    queues.add(pin(2, NEWCOMER))
    expect(queues.standingOf(1)).to.equal('stranger')
    expect(queues.standingOf(2), 'its claim may be late here').to.equal('undetermined')
    expect(queues.earlierWaiting(ORDERS, 3)).to.equal(true)
    queues.registered(NEWCOMER, 1)
    expect(queues.leave(pin(1, NEWCOMER, CLAIM)), 'nothing freed').to.equal(false)
    expect(queues.standingOf(2)).to.equal('member')
    expect(queues.earlierWaiting(ORDERS, 3)).to.equal(true)
    // Pins read after the registration are members' at once.
    queues.add(pin(3, NEWCOMER))
    expect(queues.standingOf(3)).to.equal('member')
  })

  it('frees the topics of a signer’s undetermined pins once its earlier pins are decided without registering it', () => {
    queues.add(pin(1, NEWCOMER, CLAIM))
    queues.add(pin(2, NEWCOMER))
    queues.add(pin(3, NEWCOMER))
    queues.add(pin(4, MEMBER))
    expect(queues.first(ORDERS)).to.equal(2)
    expect(queues.leave(pin(1, NEWCOMER, CLAIM)), 'its claim was rejected or refused').to.equal(true)
    expect(queues.standingOf(2)).to.equal('stranger')
    expect(queues.standingOf(3), 'pin 2, undecided, may be a second claim of its').to.equal('undetermined')
    expect(queues.first(ORDERS)).to.equal(3)
    expect(queues.leave(pin(2, NEWCOMER))).to.equal(true)
    expect(queues.standingOf(3)).to.equal('stranger')
    expect(queues.first(ORDERS), 'the member’s pin heads the topic').to.equal(4)
    expect(queues.earlierWaiting(ORDERS, 4)).to.equal(false)
  })

  it('keeps a pin before the registration a stranger’s, and reads registrations again at reset', () => {
    registered.set(NEWCOMER, 5)
    queues.add(pin(3, NEWCOMER))
    queues.add(pin(6, NEWCOMER))
    expect(queues.standingOf(3), 'signed before its claim was ordered').to.equal('stranger')
    // Its own earlier pin (3) is still undecided, but it is registered before 6.
    expect(queues.standingOf(6)).to.equal('member')
    registered.delete(NEWCOMER)
    queues.reset([pin(3, NEWCOMER), pin(6, NEWCOMER)])
    expect(queues.standingOf(6)).to.equal('undetermined')
  })

  it('counts no pin of a pin’s own event as earlier: one transaction of an unregistered account holds nothing', () => {
    queues.add(pin(1, STRANGER, CLAIM, 'e1'))
    queues.add(pin(2, STRANGER, ORDERS, 'e1'))
    expect(queues.standingOf(2)).to.equal('stranger')
    queues.add(pin(3, STRANGER, ORDERS, 'e3'))
    expect(queues.standingOf(3), 'its earlier event is undecided').to.equal('undetermined')
    queues.leave(pin(1, STRANGER, CLAIM, 'e1'))
    expect(queues.standingOf(3), 'event e1 still has a waiting pin').to.equal('undetermined')
    expect(queues.leave(pin(2, STRANGER, ORDERS, 'e1'))).to.equal(true)
    expect(queues.standingOf(3)).to.equal('stranger')
  })

  it('ignores a pin read again, and a leave of one never queued', () => {
    queues.add(pin(2, MEMBER))
    queues.add(pin(2, MEMBER))
    queues.add(pin(1, MEMBER))
    expect(queues.size).to.equal(1)
    expect(queues.leave(pin(9, MEMBER))).to.equal(false)
    expect(queues.size).to.equal(1)
  })

  it('keeps strangers’ pins of a context in chain order, also one that turns a stranger’s after later ones joined', () => {
    const other = '0xother'
    queues.add(pin(1, NEWCOMER, CLAIM))
    queues.add(pin(2, NEWCOMER))
    queues.add(pin(3, STRANGER))
    queues.add(pin(4, other))
    expect([queues.first(ORDERS), queues.first(ORDERS, true)]).to.deep.equal([2, 2])
    // Its claim decided without registering it: pin 2 joins the strangers' of its context ahead of 3 and 4.
    expect(queues.leave(pin(1, NEWCOMER, CLAIM))).to.equal(true)
    expect([queues.first(ORDERS), queues.first(ORDERS, true)]).to.deep.equal([undefined, 2])
    expect([queues.earlierWaiting(ORDERS, 2, true), queues.earlierWaiting(ORDERS, 3, true), queues.earlierWaiting(ORDERS, 9)]).to.deep.equal([false, true, false])
    queues.leave(pin(3, STRANGER))
    expect(queues.first(ORDERS, true)).to.equal(2)
    queues.leave(pin(2, NEWCOMER))
    expect(queues.first(ORDERS, true)).to.equal(4)
    queues.leave(pin(4, other))
    expect([queues.first(ORDERS, true), queues.size]).to.deep.equal([undefined, 0])
    // A pin that left already leaves nothing again.
    expect(queues.leave(pin(3, STRANGER))).to.equal(false)
  })

  it('lets a later undetermined pin of a signer leave before its earlier ones, which stay undetermined', () => {
    queues.add(pin(1, NEWCOMER, CLAIM))
    queues.add(pin(2, NEWCOMER))
    queues.add(pin(3, NEWCOMER))
    expect(queues.leave(pin(3, NEWCOMER)), 'its claim is still undecided').to.equal(false)
    expect([queues.standingOf(2), queues.standingOf(3), queues.first(ORDERS)]).to.deep.equal(['undetermined', undefined, 2])
    expect(queues.leave(pin(1, NEWCOMER, CLAIM))).to.equal(true)
    expect(queues.standingOf(2)).to.equal('stranger')
    // Pin 3 left for good: nothing brings it back once the signer's last pin leaves.
    queues.leave(pin(2, NEWCOMER))
    expect([queues.size, queues.standingOf(3), queues.first(ORDERS, true)]).to.deep.equal([0, undefined, undefined])
  })
})
