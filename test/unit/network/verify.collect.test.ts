import { expect } from 'chai'
import { randomUUID } from 'node:crypto'
import { collect, formatVerify, messageKey, verifyNetwork } from '../../../network/verify.js'
import type { ApiBatch, ApiEvent, ApiMessage } from '../../../network/inspect.js'
import { batchPinLog, keyOf, ScriptedNetwork } from '../../support/scripted-network.js'

/** verify reading a network of scripted members and a scripted chain: what it asks, and what it makes of odd answers. */
const hash = (c: string): string => c.repeat(64)
const NS = '/api/v1/namespaces'

function message(id: string, h: string, opts: { batch?: string; ns?: string; group?: string; type?: string; state?: string; digest?: string } = {}): ApiMessage {
  return {
    header: { id, type: opts.type ?? 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', namespace: opts.ns ?? 'default', topics: ['T'], datahash: `dh-${id}`, ...(opts.group ? { group: opts.group } : {}) },
    hash: h,
    ...(opts.batch ? { batch: opts.batch } : {}),
    state: opts.state ?? 'confirmed',
    data: [{ id: `d-${id}`, hash: `x-${id}`, ...(opts.digest ? { digest: opts.digest } : {}) }],
  }
}

const event = (sequence: number, reference: string, msg?: ApiMessage, type = 'message_confirmed'): ApiEvent => ({
  id: `e${sequence}`,
  sequence,
  type,
  namespace: msg?.header.namespace ?? 'default',
  reference,
  created: '',
  ...(msg ? { message: msg } : {}),
})

const batch = (id: string, ns: string, key: string, h: string, messages: { id: string; hash: string }[]): ApiBatch => ({ id, namespace: ns, type: 'broadcast', author: 'did:firefly:org/org0', key, hash: h, manifest: { messages }, state: 'confirmed' })

describe('network/verify: reading a network of scripted members', () => {
  let net: ScriptedNetwork | undefined

  afterEach(async () => {
    await net?.close()
    net = undefined
  })

  it('finds a namespace from a pin, fetches batches sealed later and groups, skips logs that pin no batch, and names who could not be read', async () => {
    const [b1, b2, b3] = [randomUUID(), randomUUID(), randomUUID()]
    net = await ScriptedNetwork.start(['org0', 'org1', 'org2', 'org3'], {
      head: 9,
      logs: [
        batchPinLog({ batch: b1, signer: keyOf('org0'), batchHash: hash('a'), block: 2 }),
        { ...batchPinLog({ batch: randomUUID(), signer: keyOf('org0'), batchHash: hash('f'), block: 3 }), removed: true },
        { ...batchPinLog({ batch: randomUUID(), signer: keyOf('org0'), batchHash: hash('f'), block: 3 }), data: '0x00' },
        batchPinLog({ batch: randomUUID(), signer: keyOf('org0'), batchHash: hash('f'), block: 4, action: 'firefly:terminate', contexts: 0 }),
        batchPinLog({ batch: b3, signer: keyOf('org0'), batchHash: hash('c'), block: 5 }),
      ],
    })
    const m1 = message('m1', 'h1', { batch: b1 })
    const m2 = message('m2', 'h2', { batch: b2, type: 'private', group: 'g1', state: 'pending' })
    const m3 = message('m3', 'h3', { batch: b3, ns: 'other' })
    const b1Batch = batch(b1, 'default', keyOf('org0'), hash('a'), [{ id: 'm1', hash: 'h1' }])
    const b3Batch = batch(b3, 'other', keyOf('org0'), hash('c'), [{ id: 'm3', hash: 'h3' }])
    net.routes('org0', {
      [`${NS}/default/batches`]: [b1Batch],
      [`${NS}/svc_system/batches`]: [],
      [`${NS}/other/batches`]: [b3Batch],
      [`/api/v1/batches/${b3}`]: b3Batch,
      [`${NS}/default/events`]: [event(1, 'm1', m1)],
      [`${NS}/svc_system/events`]: [],
      [`${NS}/other/events`]: [event(2, 'm3', m3)],
      [`${NS}/default/messages`]: [m2],
      [`${NS}/svc_system/messages`]: [],
      [`${NS}/other/messages`]: [],
      [`${NS}/default/groups/g1`]: { members: [{ identity: 'did:firefly:org/org0' }, { identity: 'did:firefly:org/org1' }] },
    })
    net.routes('org1', {
      [`${NS}/default/batches`]: [],
      [`${NS}/svc_system/batches`]: [],
      [`${NS}/other/batches`]: [b3Batch],
      [`/api/v1/batches/${b2}`]: batch(b2, 'default', keyOf('org0'), hash('b'), [{ id: 'm2', hash: 'h2' }]),
      // Events out of sequence order, and a rejection the member could not enrich with its message.
      [`${NS}/default/events`]: [event(7, 'm4', undefined, 'message_rejected'), event(3, 'm1', m1)],
      [`${NS}/svc_system/events`]: [],
      [`${NS}/other/events`]: [event(4, 'm3', m3)],
      [`${NS}/default/messages`]: [m1],
      [`${NS}/svc_system/messages`]: [],
      [`${NS}/other/messages`]: [],
    })
    net.routes('org2', { [`${NS}/default/batches`]: () => ({ status: 500, body: { error: 'database is closed' } }) })

    const { input, namespaces } = await collect(net.description, { unavailable: { org3: 'org3 is paused' } })
    expect(namespaces).to.deep.equal(['default', 'svc_system', 'other'])
    expect(input.pins.map((p) => p.batch)).to.deep.equal([b1, b3])
    expect([...input.manifests]).to.deep.equal([
      [b1, [messageKey('m1', 'h1')]],
      [b3, [messageKey('m3', 'h3')]],
      [b2, [messageKey('m2', 'h2')]],
    ])
    expect([...(input.owners ?? new Map()).keys()]).to.deep.equal([b1, b3])
    expect([...input.groups]).to.deep.equal([['g1', ['org0', 'org1']]])
    const org1 = input.members[1]!
    expect(org1.settled).to.deep.equal([
      { id: messageKey('m1', 'h1'), outcome: 'confirmed', sequence: 3 },
      { id: messageKey('m3', 'h3'), outcome: 'confirmed', sequence: 4 },
      { id: 'm4', outcome: 'rejected', sequence: 7 },
    ])
    // A pending message already held as settled is not replaced by its pending copy.
    expect([...org1.messages.keys()]).to.deep.equal([messageKey('m1', 'h1'), messageKey('m3', 'h3')])
    expect(input.members[2]!.unreachable).to.equal('org2: GET /api/v1/namespaces/default/batches?limit=1000&skip=0 answered 500 database is closed')
    expect(input.members[3]!.unreachable).to.equal('org3 is paused')
    // Neither the paused member nor the one that failed is asked for the batch sealed later.
    expect(net.asked('org3')).to.deep.equal([])
    expect(net.asked('org2')).to.deep.equal([`${NS}/default/batches`])

    const report = await verifyNetwork(net.description, { unavailable: { org3: 'org3 is paused' } })
    expect(report.ok).to.equal(false)
    expect(report.pins).to.equal(2)
    expect(report.differences.map((d) => [d.kind, d.member])).to.deep.equal([
      ['unreachable', 'org2'],
      ['unreachable', 'org3'],
    ])
  })

  it('keeps the batch its own key pinned when members hold different batches under one id', async () => {
    const b1 = randomUUID()
    net = await ScriptedNetwork.start(['org0', 'org1'], { head: 1, logs: [batchPinLog({ batch: b1, signer: keyOf('org0'), batchHash: hash('a'), block: 1 })] })
    const real = batch(b1, 'default', keyOf('org0'), hash('a'), [{ id: 'm1', hash: 'h1' }])
    const forged = batch(b1, 'default', keyOf('org1'), hash('e'), [{ id: 'mX', hash: 'hX' }])
    const routes = (held: ApiBatch) => ({
      [`${NS}/default/batches`]: [held],
      [`${NS}/svc_system/batches`]: [],
      [`${NS}/default/events`]: [],
      [`${NS}/svc_system/events`]: [],
      [`${NS}/default/messages`]: [],
      [`${NS}/svc_system/messages`]: [],
    })
    // The forged one is listed by the first member read, the real one by the second.
    net.routes('org0', routes(forged))
    net.routes('org1', routes(real))
    const { input } = await collect(net.description)
    expect(input.manifests.get(b1)).to.deep.equal([messageKey('m1', 'h1')])
    expect(input.owners?.get(b1)).to.deep.equal({ key: keyOf('org0'), hash: hash('a') })
  })

  it('names a member that lists its batches but fails on its events unreachable, with nothing of it compared', async () => {
    net = await ScriptedNetwork.start(['org0'])
    net.routes('org0', {
      [`${NS}/default/batches`]: [],
      [`${NS}/svc_system/batches`]: [],
      [`${NS}/default/events`]: () => ({ status: 503, body: 'shutting down' }),
    })
    const report = await verifyNetwork(net.description)
    expect(report.differences.map((d) => [d.kind, d.member])).to.deep.equal([['unreachable', 'org0']])
    expect(report.differences[0]!.detail).to.match(/^org0 could not be read: org0: GET \/api\/v1\/namespaces\/default\/events\?.* answered 503 shutting down$/)
    expect(formatVerify(report)).to.match(/^verify: 1 members \(org0\); namespaces default, svc_system; 0 topics \(0 broadcast, 0 private\); 0 settled messages; 0 pins on chain\nDIFFERS: 1 difference\n {2}unreachable org0 could not be read/)
  })

  it('fails with the chain named when it does not answer its head', async () => {
    net = await ScriptedNetwork.start(['org0'])
    net.chain.answer(() => ({ status: 503, body: 'starting' }))
    try {
      await verifyNetwork(net.description)
      expect.fail('verify read a chain that did not answer')
    } catch (err) {
      expect((err as Error).message).to.equal(`the chain at ${net.description.chain.rpc} did not answer eth_blockNumber`)
    }
    expect(net.asked('org0')).to.deep.equal([])
  })
})
