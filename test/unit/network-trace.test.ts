import { expect } from 'chai'
import { formatTrace, mergeTimelines, timeKey, waitingText, type MemberTrace } from '../../network/trace.js'
import { parseVerb, UsageError } from '../../network/cli-verbs.js'

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

describe('npm run network -- <verb>: argument parsing', () => {
  const parse = (verb: string, ...args: string[]) => parseVerb(verb, args, '.network')
  const fails = (verb: string, args: string[], pattern: RegExp): void => {
    expect(() => parseVerb(verb, args)).to.throw(UsageError, pattern)
  }

  it('reads each verb, with --dir defaulting as network:up does', () => {
    expect(parse('pause', 'org1')).to.deep.equal({ dir: '.network', help: false, command: { verb: 'pause', target: 'org1' } })
    expect(parse('kill', 'org1/node1', '--dir', '/tmp/x').command).to.deep.equal({ verb: 'kill', target: 'org1/node1', signal: 'SIGKILL' })
    expect(parse('kill', 'chain', '--signal', 'term').command).to.deep.equal({ verb: 'kill', target: 'chain', signal: 'SIGTERM' })
    expect(parse('hold', 'org0', 'org1').command).to.deep.equal({ verb: 'hold', deliveries: { from: 'org0', to: 'org1' } })
    expect(parse('drop', 'org0', 'org1', '--message', 'm1').command).to.deep.equal({ verb: 'drop', deliveries: { from: 'org0', to: 'org1', message: 'm1' } })
    expect(parse('release', 'org0', 'org1', '--batch', 'b1').command).to.deep.equal({ verb: 'release', deliveries: { from: 'org0', to: 'org1', batch: 'b1' } })
    expect(parse('hold', 'org2', 'chain').command).to.deep.equal({ verb: 'hold', member: 'org2', reading: 'chain' })
    expect(parse('release', 'org2', 'ipfs').command).to.deep.equal({ verb: 'release', member: 'org2', reading: 'ipfs' })
    expect(parse('mining', 'off').command).to.deep.equal({ verb: 'mining', on: false })
    expect(parse('mine').command).to.deep.equal({ verb: 'mine', blocks: 1 })
    expect(parse('mine', '3').command).to.deep.equal({ verb: 'mine', blocks: 3 })
    expect(parse('trace', 'm1', '--json').command).to.deep.equal({ verb: 'trace', message: 'm1', json: true })
    expect(parse('verify', '--namespace', 'a', '--namespace', 'b', '--allow-behind').command).to.deep.equal({ verb: 'verify', namespaces: ['a', 'b'], allowBehind: true, json: false })
    expect(parse('wait', 'm1', '--members', 'org0, org1', '--timeout', '2.5').command).to.deep.equal({ verb: 'wait', message: 'm1', members: ['org0', 'org1'], timeoutMs: 2500 })
    expect(parse('wait', 'idle').command).to.deep.equal({ verb: 'wait-idle', timeoutMs: 60_000 })
    expect(parse('confirmed', 'org1', 'T').command).to.deep.equal({ verb: 'confirmed', member: 'org1', topic: 'T', namespace: 'default', json: false })
    expect(parse('status', '--help')).to.deep.equal({ dir: '.network', help: true })
  })

  it('names what is wrong', () => {
    fails('pause', [], /pause takes one member/)
    fails('pause', ['org1', 'org2'], /got 2 arguments: org1 org2/)
    fails('hold', ['org0'], /hold takes <from> <to>/)
    fails('drop', ['org0', 'chain'], /reading is held and released, not dropped/)
    fails('hold', ['org0', 'org1', '--message', 'm', '--batch', 'b'], /not both/)
    fails('hold', ['org0', 'ipfs', '--message', 'm'], /takes no --message or --batch/)
    fails('mining', ['maybe'], /mining takes off or on/)
    fails('mine', ['0'], /from 1 to 10000/)
    fails('mine', ['x'], /from 1 to 10000/)
    fails('kill', ['org1', '--signal', 'SIGNOPE'], /--signal must be one of/)
    fails('pause', ['org1', '--json'], /pause takes no --json/)
    fails('verify', ['--bogus'], /Unknown option '--bogus'/)
    fails('wait', ['m1', '--timeout', 'soon'], /--timeout is in seconds/)
    fails('wait', ['idle', '--members', 'org1'], /wait idle takes only --timeout/)
    fails('trace', ['m1', '--namespace', 'a', '--namespace', 'b'], /one --namespace/)
    fails('frobnicate', [], /unknown command: frobnicate/)
  })
})
