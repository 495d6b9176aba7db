import { expect } from 'chai'
import { formatTrace, mergeTimelines, timeKey, waitingText, type MemberTrace } from '../../../network/trace.js'

describe('network trace: merging members\' timelines', () => {
  it('orders timestamps of any precision', () => {
    const times = ['2026-01-01T10:00:00.5Z', '2026-01-01T10:00:00.123456789Z', '2026-01-01T10:00:00Z', '2026-01-01T09:59:59.999999999Z', '2026-01-01T10:00:00.12Z']
    expect([...times].sort((a, b) => (timeKey(a) < timeKey(b) ? -1 : 1))).to.deep.equal([
      '2026-01-01T09:59:59.999999999Z',
      '2026-01-01T10:00:00Z',
      '2026-01-01T10:00:00.12Z',
      '2026-01-01T10:00:00.123456789Z',
      '2026-01-01T10:00:00.5Z',
    ])
  })

  const sender: MemberTrace = {
    message: 'm2',
    org: 'org0',
    node: 'node0',
    state: 'confirmed',
    timeline: [
      { at: '2026-01-01T10:00:00.100Z', step: 'accepted', detail: 'accepted by the API' },
      { at: '2026-01-01T10:00:00.300Z', step: 'sealed', detail: 'sealed in a batch', batch: 'b-1' },
      { at: '2026-01-01T10:00:00.9Z', step: 'mined', detail: 'pin mined', block: 12, logIndex: 0, tx: 'ff-tx' },
    ],
  }
  const receiver: MemberTrace = {
    message: 'm2',
    org: 'org1',
    node: 'node1',
    state: 'pending',
    timeline: [{ at: '2026-01-01T10:00:00.950Z', step: 'received', detail: 'batch received from org0', batch: 'b-1' }],
    waiting: { reason: 'blocked', detail: 'an earlier message on topic T has not arrived', blockedBy: { message: 'm1', author: 'did:firefly:org/org0', nonce: 0, topic: 'T' } },
  }

  it('interleaves every member\'s steps by time, each naming its member', () => {
    const merged = mergeTimelines([receiver, sender])
    expect(merged.map((s) => `${s.org}:${s.step}`)).to.deep.equal(['org0:accepted', 'org0:sealed', 'org0:mined', 'org1:received'])
  })

  it('prints each member\'s state with what it waits for, then the timeline', () => {
    const text = formatTrace({
      message: 'm2',
      namespace: 'default',
      members: [
        { org: 'org0', node: 'node0', status: 'ok', trace: sender },
        { org: 'org1', node: 'node1', status: 'ok', trace: receiver },
        { org: 'org2', node: 'node2', status: 'unknown' },
      ],
      timeline: mergeTimelines([sender, receiver]),
    })
    expect(text).to.contain('org1/node1  pending: waiting (blocked): an earlier message on topic T has not arrived [the blocker is message m1]')
    expect(text).to.contain('org2/node2  not known here')
    expect(text).to.contain('timeline (UTC, 2026-01-01):')
    expect(text).to.match(/10:00:00\.300 {2}org0 {2}sealed {4}sealed in a batch \(batch b-1\)/)
    expect(text).to.match(/10:00:00\.900 {2}org0 {2}mined {5}pin mined \(block 12, logIndex 0\)/)
    expect(waitingText({ reason: 'pin', detail: 'its pin is not mined yet' })).to.equal('waiting (pin): its pin is not mined yet')
    expect(waitingText({ reason: 'blocked', detail: 'behind nonce 3', blockedBy: { author: 'did:firefly:org/org0', topic: 'T', nonce: 3 } })).to.equal('waiting (blocked): behind nonce 3')
    expect(waitingText({ reason: 'blocked', detail: 'behind m1', blockedBy: { message: 'm1', author: 'did:firefly:org/org0', topic: 'T' } })).to.equal('waiting (blocked): behind m1')
    expect(waitingText({ reason: 'blocked', detail: 'd', blockedBy: { message: 'm1', namedBy: 'org0', author: 'did:firefly:org/org0', topic: 'T' } })).to.equal(
      'waiting (blocked): d [the blocker is message m1, named by org0, which holds its batch]',
    )
  })
})
