import { expect } from 'chai'
import { randomUUID } from 'node:crypto'
import { formatTrace, namespaceOf, timeKey, traceMessage, waitingText, type MemberTrace } from '../../../network/trace.js'
import { batchPinLog, keyOf, ScriptedNetwork } from '../../support/scripted-network.js'

/** A message's trace read from scripted members: who answers what, and how a blocker is named by another member. */
const NS = '/api/v1/namespaces'
const A = 'did:firefly:org/org9'

const traceOf = (org: string, waiting?: MemberTrace['waiting']): MemberTrace => ({
  message: 'm1',
  org,
  node: `node-${org}`,
  state: waiting ? 'pending' : 'confirmed',
  timeline: [{ at: '2026-01-01T10:00:00.100Z', step: 'received', detail: 'batch received' }],
  ...(waiting ? { waiting } : {}),
})

const header = (author: string, topics: string[]) => ({ header: { author, topics } })

async function rejection(p: Promise<unknown>): Promise<string> {
  try {
    await p
  } catch (err) {
    return (err as Error).message
  }
  return expect.fail('expected a rejection')
}

describe('network/trace: reading a message\'s trace from every member', () => {
  let net: ScriptedNetwork | undefined

  afterEach(async () => {
    await net?.close()
    net = undefined
  })

  it('tells each member\'s answer apart, and names the blockers others hold: by nonce for a private one, first on the topic for a broadcast', async () => {
    net = await ScriptedNetwork.start(['org0', 'org1', 'org2', 'org3', 'org4'])
    const [privateBatch, broadcastBatch] = [randomUUID(), randomUUID()]
    const tracePath = `${NS}/ns1/messages/m1/trace`
    net.routes('org0', { [tracePath]: traceOf('org0', { reason: 'blocked', detail: '', blockedBy: { author: A, topic: 'T', nonce: 2, batch: privateBatch } }) })
    net.routes('org1', {
      [tracePath]: traceOf('org1', { reason: 'blocked', detail: 'behind a broadcast', blockedBy: { author: A, topic: 'U', batch: broadcastBatch } }),
      // org1 holds neither batch; org0 holds the broadcast one but its messages are another author's.
    })
    net.routes('org2', {
      [tracePath]: () => ({ status: 404, body: { error: 'message m1 not found' } }),
      [`/api/v1/batches/${privateBatch}`]: { namespace: 'ns1', manifest: { messages: [{ id: 'x1' }, { id: 'x2' }, { id: 'x3' }, { id: 'x4' }, { id: 'x5' }] } },
      [`${NS}/ns1/messages/x1`]: { ...header('did:firefly:org/org0', ['T']), pins: ['p:2'] },
      [`${NS}/ns1/messages/x2`]: { ...header(A, ['V']), pins: ['p:2'] },
      [`${NS}/ns1/messages/x3`]: () => ({ status: 404, body: { error: 'gone' } }),
      [`${NS}/ns1/messages/x4`]: { ...header(A, ['V', 'T']), pins: ['p:2', 'p:1'] },
      [`${NS}/ns1/messages/x5`]: { ...header(A, ['V', 'T']), pins: ['p:9', 'p:2'] },
      [`/api/v1/batches/${broadcastBatch}`]: { manifest: { messages: [{ id: 'y1' }, { id: 'y2' }] } },
      [`${NS}/ns1/messages/y1`]: header(A, ['W']),
      [`${NS}/ns1/messages/y2`]: header(A, ['U']),
    })
    net.routes('org3', { [tracePath]: () => ({ status: 404, body: { error: 'No route for GET' } }) })
    net.routes('org4', { [tracePath]: () => ({ status: 500, body: 'boom' }) })
    const t = await traceMessage(net.description, 'm1', { namespace: 'ns1', unavailable: { org4: 'org4 is paused' } })
    expect(t.members.map((m) => [m.org, m.status, m.error ?? null])).to.deep.equal([
      ['org0', 'ok', null],
      ['org1', 'ok', null],
      ['org2', 'unknown', 'message m1 not found'],
      ['org3', 'unreachable', 'org3 serves no trace route (No route for GET)'],
      ['org4', 'unreachable', 'org4 is paused'],
    ])
    expect(t.members[0]!.trace!.waiting!.blockedBy).to.deep.include({ message: 'x5', namedBy: 'org2' })
    expect(t.members[1]!.trace!.waiting!.blockedBy).to.deep.include({ message: 'y2', namedBy: 'org2' })
    expect(net.asked('org4')).to.deep.equal([])
    expect(waitingText(t.members[0]!.trace!.waiting!)).to.equal(`waiting (blocked): blocked behind the message of ${A} on topic T [the blocker is message x5, named by org2, which holds its batch]`)
    expect(formatTrace(t)).to.contain('org4/node4  no answer: org4 is paused')
  })

  it('says no member knows the message when all answer 404, and lists the errors when none could answer', async () => {
    net = await ScriptedNetwork.start(['org0', 'org1'])
    const tracePath = `${NS}/ns1/messages/m1/trace`
    net.routes('org0', { [tracePath]: () => ({ status: 404, body: { error: 'not found' } }) })
    net.routes('org1', { [tracePath]: () => ({ status: 404, body: { error: 'not found' } }) })
    expect(await rejection(traceMessage(net.description, 'm1', { namespace: 'ns1' }))).to.equal('no member knows message m1 in namespace ns1')
    net.routes('org1', { [tracePath]: () => ({ status: 502, body: { error: 'bad gateway' } }) })
    expect(await rejection(traceMessage(net.description, 'm1', { namespace: 'ns1' }))).to.equal('no member answered the trace of m1: org0: not found; org1: answered 502 bad gateway')
    const gone = net.servers.get('org1')!
    await gone.close()
    expect(await rejection(traceMessage(net.description, 'm1', { namespace: 'ns1' }))).to.match(/; org1: org1 is not running \(connection refused at http:\/\/127\.0\.0\.1:\d+\)$/)
  })
})

describe('network/trace: finding the namespace of a message', () => {
  let net: ScriptedNetwork | undefined

  afterEach(async () => {
    await net?.close()
    net = undefined
  })

  const base = { [`${NS}/default/batches`]: [], [`${NS}/svc_system/batches`]: [] }

  it('is default when a member holds it there, asking no paused member', async () => {
    net = await ScriptedNetwork.start(['org0', 'org1'])
    net.routes('org0', { [`${NS}/default/messages/m1`]: () => ({ status: 500, body: 'x' }) })
    net.routes('org1', { [`${NS}/default/messages/m1`]: {} })
    expect(await namespaceOf(net.description, 'm1', { org0: 'paused' })).to.equal('default')
    expect(net.asked('org0')).to.deep.equal([])
    expect(net.chain.requests).to.have.length(0)
  })

  it('is the namespace of a pinned batch listing it, or else the one of those found where a member holds it', async () => {
    const [b1, b2] = [randomUUID(), randomUUID()]
    net = await ScriptedNetwork.start(['org0'], {
      head: 3,
      logs: [batchPinLog({ batch: b1, signer: keyOf('org0'), batchHash: 'a'.repeat(64), block: 1 }), batchPinLog({ batch: b2, signer: keyOf('org0'), batchHash: 'b'.repeat(64), block: 2 })],
    })
    const batch = (id: string, ns: string, messages: string[]) => ({ id, namespace: ns, type: 'broadcast', author: A, manifest: { messages: messages.map((m) => ({ id: m, hash: 'h' })) }, state: 'confirmed' })
    net.routes('org0', {
      ...base,
      [`/api/v1/batches/${b1}`]: batch(b1, 'alpha', ['m1']),
      [`/api/v1/batches/${b2}`]: batch(b2, 'beta', ['m7']),
      [`${NS}/alpha/batches`]: [batch(b1, 'alpha', ['m1'])],
      [`${NS}/beta/batches`]: [batch(b2, 'beta', ['m7'])],
      [`${NS}/beta/messages/m2`]: {},
    })
    expect(await namespaceOf(net.description, 'm1')).to.equal('alpha')
    // m2 is in no manifest (unpinned), but beta holds it.
    expect(await namespaceOf(net.description, 'm2')).to.equal('beta')
    expect(await rejection(namespaceOf(net.description, 'm3'))).to.equal(
      'no member holds message m3 in default or in any namespace with a batch on the chain (default, svc_system, alpha, beta); name its namespace',
    )
  })
})

describe('network/trace: the trace in words', () => {
  it('keeps a time it cannot read as it is, and orders by it as text', () => {
    expect(timeKey('yesterday')).to.equal('yesterday')
    expect(timeKey('2026-13-45T10:00:00Z')).to.equal('2026-13-45T10:00:00Z')
    expect(timeKey('2026-01-01T10:00:00+01:00') < timeKey('2026-01-01T10:00:00Z')).to.equal(true)
  })

  it('dates each step when the timeline spans days, prints fields in their order, and leaves out the transaction id', () => {
    const text = formatTrace({
      message: 'm1',
      namespace: 'default',
      members: [{ org: 'org0', node: 'node0', status: 'ok', trace: traceOf('org0') }],
      timeline: [
        { at: '2026-01-01T23:59:59Z', step: 'sealed', detail: 'sealed in b-1', batch: 'b-1', tx: 'ff-tx', org: 'org0', node: 'node0' },
        { at: '2026-01-02T00:00:00.5Z', step: 'mined', block: 7, extra: { a: 1 }, reason: '', logIndex: null, org: 'org0', node: 'node0' },
      ],
    })
    expect(text.split('\n').slice(2)).to.deep.equal([
      '',
      'timeline:',
      '  2026-01-01T23:59:59.000Z  org0  sealed  sealed in b-1',
      '  2026-01-02T00:00:00.500Z  org0  mined   (block 7, extra {"a":1})',
    ])
  })

  it('prints the members alone when no member has a step', () => {
    const t = traceOf('org0')
    expect(formatTrace({ message: 'm1', namespace: 'default', members: [{ org: 'org0', node: 'node0', status: 'ok', trace: { ...t, timeline: [] } }], timeline: [] })).to.equal(
      'message m1 (namespace default)\n  org0/node0  confirmed',
    )
  })
})
