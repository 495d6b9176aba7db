import { expect } from 'chai'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ControlError, NetworkControls } from '../../../network/controls.js'
import { confirmedOnTopic, waitConfirmed, waitIdle, WaitTimeoutError, type NetworkRef } from '../../../network/suite.js'
import { IdleProcesses } from '../../support/idle-process.js'
import { rpcMethod, rpcResult, scriptedEndpoint, type ScriptedRequest } from '../../support/scripted-server.js'
import { ScriptedNetwork, type MemberRoutes } from '../../support/scripted-network.js'

/** The suite helper's waits on scripted members: what ends a wait, and what a timeout or a disagreement says. */
const NS = '/api/v1/namespaces'

const message = (id: string, state: string, opts: { group?: string; topics?: string[]; confirmed?: string; rejectReason?: string } = {}) => ({
  header: { id, type: opts.group ? 'private' : 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', namespace: 'default', topics: opts.topics ?? ['T'], datahash: 'dh', ...(opts.group ? { group: opts.group } : {}) },
  hash: `h-${id}`,
  state,
  data: [],
  ...(opts.confirmed ? { confirmed: opts.confirmed } : {}),
  ...(opts.rejectReason ? { rejectReason: opts.rejectReason } : {}),
})

async function failure<E extends Error>(p: Promise<unknown>, type: new (...args: never[]) => E): Promise<E> {
  try {
    await p
  } catch (err) {
    expect(err).to.be.instanceOf(type)
    return err as E
  }
  return expect.fail('the wait did not fail')
}

describe('network/suite: waiting on a network', () => {
  const idle = new IdleProcesses()
  let net: ScriptedNetwork
  let dir: string
  let ref: NetworkRef
  let nodePids: number[]

  before(async () => {
    net = await ScriptedNetwork.start(['org0', 'org1', 'org2'])
  })

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'suite-'))
    nodePids = [idle.start(), idle.start(), idle.start()]
    const processes = nodePids.map((pid, i) => ({ name: `node${i}`, pid }))
    writeFileSync(join(dir, 'pids.json'), JSON.stringify({ processes }))
    ref = { dir, description: net.description }
    for (const s of net.servers.values()) s.requests.length = 0
    net.chain.answer((r) => (rpcMethod(r) === 'eth_blockNumber' ? rpcResult(r, '0x0') : rpcResult(r, [])))
  })

  afterEach(async () => {
    await idle.stopAll()
    rmSync(dir, { recursive: true, force: true })
  })

  after(() => net.close())

  const routesAll = (routes: (org: string) => MemberRoutes): void => {
    for (const org of ['org0', 'org1', 'org2']) net.routes(org, routes(org))
  }

  describe('waitConfirmed', () => {
    it('waits for the group of a private message only, and answers each member\'s state with its time or reason', async () => {
      routesAll((org) => ({
        [`${NS}/default/messages/m1`]:
          org === 'org0' ? message('m1', 'confirmed', { group: 'g1', confirmed: '2026-01-01T00:00:00Z' }) : org === 'org1' ? message('m1', 'rejected', { group: 'g1', rejectReason: 'bad data' }) : () => ({ status: 404, body: { error: 'not found' } }),
        [`${NS}/default/groups/g1`]: { members: [{ identity: 'did:firefly:org/org0' }, { identity: 'did:firefly:org/org1' }] },
      }))
      expect(await waitConfirmed(ref, 'm1', { namespace: 'default', timeoutMs: 5000, intervalMs: 10 })).to.deep.equal({
        org0: { org: 'org0', state: 'confirmed', confirmed: '2026-01-01T00:00:00Z' },
        org1: { org: 'org1', state: 'rejected', rejectReason: 'bad data' },
      })
    })

    it('times out naming a message no member holds', async () => {
      routesAll(() => ({ [`${NS}/default/batches`]: [], [`${NS}/svc_system/batches`]: [] }))
      const e = await failure(waitConfirmed(ref, 'm9', { timeoutMs: 50, intervalMs: 10 }), WaitTimeoutError)
      expect(e.message).to.equal('timed out after 50 ms waiting for message m9 to be confirmed on org0, org1, org2 (no member holds it); still waiting on org0: unknown, org1: unknown, org2: unknown')
      expect(e.trace).to.equal(undefined)
    })

    it('times out with each named member\'s state (paused, failing, pending) and the message\'s trace', async () => {
      process.kill(nodePids[2]!, 'SIGSTOP')
      // org1's API is a server that has gone.
      const gone = await scriptedEndpoint()
      await gone.close()
      ref = { dir, description: { ...net.description, members: net.description.members.map((m) => (m.org === 'org1' ? { ...m, api: gone.url } : m)) } }
      routesAll((org) => ({
        [`${NS}/default/messages/m1`]: message('m1', 'pending'),
        [`${NS}/default/messages/m1/trace`]: { message: 'm1', org, node: 'n', state: 'pending', timeline: [], waiting: { reason: 'pin', detail: 'its pin is not mined yet' } },
      }))
      const e = await failure(waitConfirmed(ref, 'm1', { namespace: 'default', members: ['org0', 'org1', 'org2'], timeoutMs: 50, intervalMs: 10 }), WaitTimeoutError)
      process.kill(nodePids[2]!, 'SIGCONT')
      expect(e.states).to.deep.equal({
        org0: { org: 'org0', state: 'pending' },
        org1: { org: 'org1', state: `no answer (org1 is not running (connection refused at ${gone.url}))` },
        org2: { org: 'org2', state: 'org2 is paused' },
      })
      expect(e.message).to.match(/^timed out after 50 ms waiting for message m1 to be confirmed on org0, org1, org2; still waiting on org0: pending, org1: no answer/)
      expect(e.message).to.contain('\nmessage m1 (namespace default)\n')
      expect(e.message).to.contain('pending: waiting (pin): its pin is not mined yet')
      expect(e.trace?.members.map((m) => m.status)).to.deep.equal(['ok', 'unreachable', 'unreachable'])
    })
  })

  describe('waitIdle', () => {
    const idleMember = (org: string, extra: MemberRoutes = {}): MemberRoutes => ({
      '/api/v1/status': { chain: { lastProcessedBlock: 0 } },
      [`${NS}/default/batches`]: [],
      [`${NS}/svc_system/batches`]: [],
      [`${NS}/default/events`]: [],
      [`${NS}/svc_system/events`]: [],
      [`${NS}/default/messages`]: [],
      [`${NS}/svc_system/messages`]: [],
      '/admin/v1/controls': { exchange: { held: org === 'org0' ? [{ to: 'org1' }] : [], dropped: [] }, chain: { held: false }, ipfs: { held: false } },
      ...extra,
    })

    it('returns once nothing moves', async () => {
      routesAll((org) => idleMember(org))
      await waitIdle(ref, { timeoutMs: 2000, intervalMs: 10 })
    })

    it('times out naming transactions waiting with mining off, members behind the head or not answering, and the controls in force', async () => {
      net.chain.answer((r: ScriptedRequest) => {
        const m = rpcMethod(r)
        if (m === 'eth_getBlockTransactionCountByNumber') return rpcResult(r, '0x1')
        if (m === 'hardhat_getAutomine') return rpcResult(r, false)
        return rpcResult(r, '0x5')
      })
      routesAll((org) => idleMember(org, org === 'org2' ? { '/api/v1/status': () => ({ status: 503, body: { error: 'starting' } }) } : {}))
      const e = await failure(waitIdle(ref, { timeoutMs: 30, intervalMs: 10 }), WaitTimeoutError)
      expect(e.message).to.equal(
        'timed out after 30 ms waiting for the network to be idle:\n' +
          '  1 transaction wait to be mined (mining is off: npm run network -- mine, or mining on)\n' +
          '  org0 has read the chain to block 0 of 5\n' +
          '  org1 has read the chain to block 0 of 5\n' +
          '  org2: GET /api/v1/status answered 503 starting\n' +
          'controls in force:\n' +
          '  org0: holds deliveries to org1',
      )
    })

    it('times out naming the pending messages, with the first one\'s trace', async () => {
      const pending = message('m1', 'pending')
      routesAll((org) =>
        idleMember(org, {
          [`${NS}/default/messages`]: org === 'org1' ? [pending, message('m2', 'staged')] : [],
          [`${NS}/default/messages/m1/trace`]: { message: 'm1', org, node: 'n', state: 'pending', timeline: [] },
        }),
      )
      const e = await failure(waitIdle(ref, { timeoutMs: 30, intervalMs: 10 }), WaitTimeoutError)
      expect(e.message).to.match(/^timed out after 30 ms waiting for the network to be idle:\n {2}org1 holds 2 pending messages \(first: m1, pending\)\ncontrols in force:\n {2}org0: holds deliveries to org1\nmessage m1 \(namespace default\)/)
    })

    it('fails at once when the members disagree in a way waiting cannot mend', async () => {
      routesAll((org) =>
        idleMember(org, {
          [`${NS}/default/events`]: [
            { id: 'e1', sequence: 1, type: 'message_confirmed', namespace: 'default', reference: 'm1', created: '' },
            ...(org === 'org1' ? [{ id: 'e2', sequence: 2, type: 'message_confirmed', namespace: 'default', reference: 'm1', created: '' }] : []),
          ],
        }),
      )
      const e = await failure(waitIdle(ref, { timeoutMs: 60_000, intervalMs: 10 }), ControlError)
      expect(e.message).to.equal('the members disagree; waiting cannot mend it:\n  org1 settled message m1 more than once (event sequence 2)')
    })
  })

  describe('confirmedOnTopic', () => {
    const event = (sequence: number, reference: string, type = 'message_confirmed', msg?: unknown) => ({ id: `e${sequence}`, sequence, type, namespace: 'default', reference, created: '', ...(msg ? { message: msg } : {}) })

    it('answers the confirmed messages on the topic in the member\'s order, fetching those the event does not carry', async () => {
      net.routes('org1', {
        [`${NS}/default/events`]: [event(1, 'm1', 'message_confirmed', message('m1', 'confirmed', { topics: ['T'] })), event(2, 'm2'), event(3, 'm3', 'message_rejected'), event(4, 'm4', 'message_confirmed', message('m4', 'confirmed', { topics: ['U'] }))],
        [`${NS}/default/messages/m2`]: message('m2', 'confirmed', { topics: ['U', 'T'] }),
      })
      expect((await confirmedOnTopic(ref, 'org1', 'T')).map((m) => m.header.id)).to.deep.equal(['m1', 'm2'])
      expect(net.asked('org1')).to.deep.equal([`${NS}/default/events`, `${NS}/default/messages/m2`])
      // The network named by its folder, or by its controls, reads the same.
      writeFileSync(join(dir, 'network.json'), JSON.stringify(net.description))
      expect((await confirmedOnTopic(dir, 'org1', 'U')).map((m) => m.header.id)).to.deep.equal(['m2', 'm4'])
      expect((await confirmedOnTopic(new NetworkControls(dir), 'org1', 'T')).map((m) => m.header.id)).to.deep.equal(['m1', 'm2'])
    })

    it('turns a member\'s failure into a ControlError naming it', async () => {
      net.routes('org1', { [`${NS}/default/events`]: () => ({ status: 500, body: { error: 'closed' } }) })
      expect((await failure(confirmedOnTopic(ref, 'org1', 'T'), ControlError)).message).to.match(/^org1: GET \/api\/v1\/namespaces\/default\/events\?.* answered 500 closed$/)
      net.routes('org1', { [`${NS}/default/events`]: [event(1, 'm1')] })
      expect((await failure(confirmedOnTopic(ref, 'org1', 'T'), ControlError)).message).to.equal('org1: GET /api/v1/namespaces/default/messages/m1 answered 404 No route for GET /api/v1/namespaces/default/messages/m1')
    })
  })
})
