import { expect } from 'chai'
import { setTimeout as sleep } from 'node:timers/promises'
import type { MemberDescription } from '../../network/description.js'
import { waitFor } from '../../network/process.js'
import { confirmedOnTopic, waitConfirmed, waitIdle, WaitTimeoutError } from '../../network/suite.js'
import type { NetworkTrace } from '../../network/trace.js'
import { networkCli, suiteNetwork } from '../support/network.js'
import { broadcast, get, nsBase, request, runId, type ApiMessage } from '../support/api.js'
import { chainPins } from '../support/chain-order.js'

/**
 * The test controls on a real 3-member network, used only through what a suite of a multi-org application has:
 * startNetwork()'s handle (the same implementation as `npm run network -- <verb>`), the suite helper, and the CLI.
 * Scenarios follow issue 12 item 5; verify runs after each one, and shows a difference while a member is behind.
 */
describe('test controls on a real 3-member network', function () {
  this.timeout(300_000)
  const t = suiteNetwork('controls')
  const { members } = t
  const run = runId()
  const ns = `ctl-${run}`
  const T = `t-${run}`
  const U = `u-${run}`
  /** How long something blocked is watched not to move: several batch timeouts and blocks. */
  const WATCH_MS = 3_000
  const org = (i: number): MemberDescription => members[i]!

  async function sendPrivate(topic: string, value: unknown): Promise<string> {
    const r = await request<ApiMessage>('POST', `${nsBase(org(0), ns)}/messages/private`, { header: { topics: [topic] }, group: { members: [{ identity: org(1).org }] }, data: [{ value }] })
    expect(r.status, JSON.stringify(r.body)).to.equal(202)
    return r.body.header.id
  }
  async function sendBroadcast(m: MemberDescription, topic: string, value: unknown): Promise<string> {
    const r = await broadcast(m, ns, { header: { topics: [topic] }, data: [{ value }] })
    expect(r.status, JSON.stringify(r.body)).to.equal(202)
    return r.body.header.id
  }
  async function stateOn(m: MemberDescription, id: string): Promise<string | undefined> {
    const r = await get<ApiMessage>(`${nsBase(m, ns)}/messages/${id}`)
    return r.status === 200 ? r.body.state : undefined
  }
  /** Waits until org0 has sealed the message into a batch: what it sends next goes in another batch. */
  async function sealed(id: string): Promise<string> {
    let batch: string | undefined
    await waitFor(`org0 to seal ${id} into a batch`, async () => {
      batch = (await get<ApiMessage>(`${nsBase(org(0), ns)}/messages/${id}`)).body.batch
      return batch !== undefined
    }, { timeoutMs: 30_000, intervalMs: 50 })
    return batch!
  }
  const ids = async (member: string, topic: string): Promise<string[]> => (await confirmedOnTopic(t.net, member, topic, ns)).map((m) => m.header.id)
  /** The trace of `id` as org1 has it, once it says it waits blocked (the pin may take a moment to be read). */
  async function blockedOnOrg1(id: string): Promise<NetworkTrace> {
    let last: NetworkTrace | undefined
    await waitFor(`org1's trace of ${id} to say it is blocked`, async () => {
      last = await t.net.trace(id, { namespace: ns })
      return last.members.find((m) => m.org === org(1).org)?.trace?.waiting?.reason === 'blocked'
    }, { timeoutMs: 30_000, intervalMs: 200 })
    return last!
  }
  async function verifyOk(): Promise<void> {
    await waitIdle(t.net, { timeoutMs: 60_000 })
    const report = await t.net.verify()
    expect(report.differences, JSON.stringify(report.differences, null, 2)).to.deep.equal([])
    expect(report.ok).to.equal(true)
    expect(report.namespaces).to.include(ns)
  }

  let m1: string, m2: string, m3: string

  it('org0 and org1 share a group: its first message (which carries the group definition) is confirmed on org1', async () => {
    // Without it, m1's batch would carry the group's definition, and org1 would refuse every later batch of the
    // group (503, retried) while m1's is held: U would wait too, for a reason this test is not about.
    const first = await sendPrivate(`g-${run}`, 'group')
    await waitConfirmed(t.net, first, { namespace: ns })
  })

  it('org0\'s delivery of m1 to org1 held: org1 confirms m3 (topic U) but not m2 (T, behind m1); org1\'s trace of m2 names m1', async () => {
    m1 = await sendPrivate(T, 'm1')
    // Held right after the 202: the batch holding m1 is sealed 500 ms later at the earliest, and its delivery asks
    // the gate first. (A hold of every delivery to org1 would hold m2 and m3 as well.)
    const held = await t.net.hold({ from: 'org0', to: 'org1', message: m1 })
    expect(held.exchange.held.map((r) => [r.to, r.message])).to.deep.equal([['org1', m1]])
    // m2 and m3 go in a later batch than m1's (a hold names deliveries, and a delivery is a batch).
    await sealed(m1)
    m2 = await sendPrivate(T, 'm2')
    m3 = await sendPrivate(U, 'm3')

    const states = await waitConfirmed(t.net, m3, { namespace: ns, timeoutMs: 60_000 })
    expect(Object.keys(states).sort(), 'a private message waits for its group only').to.deep.equal(['org0', 'org1'])
    expect(states.org1!.state).to.equal('confirmed')

    const trace = await blockedOnOrg1(m2)
    const onOrg1 = trace.members.find((m) => m.org === 'org1')!.trace!
    expect(onOrg1.state).to.not.equal('confirmed')
    expect(onOrg1.waiting!.blockedBy, JSON.stringify(onOrg1.waiting)).to.include({ message: m1, topic: T })
    expect(onOrg1.waiting!.blockedBy!.author).to.match(/org0$/)
    expect(trace.members.find((m) => m.org === 'org0')!.trace!.state).to.equal('confirmed')
    expect(trace.members.find((m) => m.org === 'org2')!.status, 'org2 is not in the group').to.equal('unknown')
    expect(trace.timeline.map((s) => s.org)).to.include.members(['org0', 'org1'])
    expect(await stateOn(org(1), m1), 'm1 never reached org1').to.equal(undefined)
    expect(await ids('org1', T)).to.deep.equal([])
    expect(await ids('org1', U)).to.deep.equal([m3])
  })

  it('verify, while org1 is behind on T, reports the lag (non-ok) and names m1 as the next message on the chain', async () => {
    const report = await t.net.verify()
    expect(report.ok).to.equal(false)
    const behind = report.differences.filter((d) => d.kind === 'behind')
    expect(behind.map((d) => [d.member, d.topic?.topic, d.message])).to.deep.include(['org1', T, m1])
    expect(report.differences.filter((d) => d.kind !== 'behind'), 'nothing but the lag').to.deep.equal([])
    const lenient = await t.net.verify({ allowBehind: true })
    expect(lenient.ok).to.equal(true)
    expect(lenient.notes.length).to.equal(behind.length)
  })

  it('after the release org1 confirms m1 then m2; verify passes', async () => {
    const released = await t.net.release({ from: 'org0', to: 'org1', message: m1 })
    expect(released.exchange.held).to.deep.equal([])
    await waitConfirmed(t.net, m2, { namespace: ns, members: ['org1'] })
    expect(await ids('org1', T)).to.deep.equal([m1, m2])
    expect(await ids('org0', T)).to.deep.equal([m1, m2])
    await verifyOk()
  })

  let m4: string, m5: string
  it('one delivery dropped: T stays blocked on org1 and the trace says behind which message, while U goes on', async () => {
    m4 = await sendPrivate(T, 'm4')
    const dropped = await t.net.drop({ from: 'org0', to: 'org1', message: m4 })
    expect(dropped.dropped.map((r) => r.message)).to.deep.equal([m4])
    await sealed(m4)
    m5 = await sendPrivate(T, 'm5')
    const m6 = await sendPrivate(U, 'm6')
    await waitConfirmed(t.net, m6, { namespace: ns, members: ['org1'] })

    const trace = await blockedOnOrg1(m5)
    expect(trace.members.find((m) => m.org === 'org1')!.trace!.waiting!.blockedBy).to.include({ message: m4, topic: T })
    const until = Date.now() + WATCH_MS
    while (Date.now() < until) {
      expect(await stateOn(org(1), m5), 'blocked behind the dropped m4').to.not.equal('confirmed')
      expect(await stateOn(org(1), m4), 'a dropped delivery is never retried').to.equal(undefined)
      await sleep(250)
    }
    expect(await ids('org1', U)).to.deep.equal([m3, m6])
    expect(await ids('org1', T)).to.deep.equal([m1, m2])

    // The suite helper's idle wait names what does not move.
    const err = await waitIdle(t.net, { timeoutMs: 1500 }).then(() => undefined, (e: unknown) => e)
    expect(err).to.be.instanceOf(WaitTimeoutError)
    expect((err as Error).message).to.contain(`org1 has settled 2 of the 4 messages pinned on ${ns}/${T}`)
    expect((err as Error).message).to.match(/org0: dropped deliveries to org1 of message/)
  })

  it('a restart of org0 undoes the drop (a recovered sender sends it): org1 confirms m4 then m5; verify passes', async () => {
    await t.net.restart('org0')
    await waitConfirmed(t.net, m5, { namespace: ns, members: ['org1'] })
    expect(await ids('org1', T)).to.deep.equal([m1, m2, m4, m5])
    expect((await t.net.controlsOf('org0')).exchange.dropped).to.deep.equal([])
    await verifyOk()
  })

  it('a paused member answers nothing, and catches up after resume in the same order as the others', async () => {
    await t.net.pause('org2')
    expect(t.net.processes.find((p) => p.org === 'org2')!.state).to.equal('paused')
    const B = `b-${run}`
    const sent: string[] = []
    for (let i = 0; i < 5; i++) sent.push(await sendBroadcast(org(i % 2), B, i))
    await Promise.all(sent.map((id) => waitConfirmed(t.net, id, { namespace: ns, members: ['org0', 'org1'] })))
    const silent = await fetch(`${org(2).api}/api/v1/status`, { signal: AbortSignal.timeout(1000) }).then(() => 'answered', () => 'no answer')
    expect(silent).to.equal('no answer')
    await t.net.resume('org2')
    expect(t.net.processes.find((p) => p.org === 'org2')!.state).to.equal('running')
    await Promise.all(sent.map((id) => waitConfirmed(t.net, id, { namespace: ns })))
    const order = await ids('org0', B)
    expect([...order].sort()).to.deep.equal([...sent].sort())
    expect(await ids('org1', B)).to.deep.equal(order)
    expect(await ids('org2', B)).to.deep.equal(order)
    await verifyOk()
  })

  it('a member holding its reading of the chain falls behind (verify says so) and catches up at the release', async () => {
    await t.net.holdReading('org2', 'chain')
    const C = `c-${run}`
    const id = await sendBroadcast(org(0), C, 'chain held')
    await waitConfirmed(t.net, id, { namespace: ns, members: ['org0', 'org1'] })
    await sleep(1000)
    expect(await stateOn(org(2), id)).to.not.equal('confirmed')
    const report = await t.net.verify()
    expect(report.differences.map((d) => [d.kind, d.member, d.topic?.topic])).to.deep.include(['behind', 'org2', C])
    await t.net.releaseReading('org2', 'chain')
    await waitConfirmed(t.net, id, { namespace: ns })
    await verifyOk()
  })

  it('mining off: two members\' batches land in one block at mine(), and every member confirms them in that block\'s order', async () => {
    const M = `m-${run}`
    await t.net.mining(false)
    try {
      const a = await sendBroadcast(org(0), M, 'from org0')
      const b = await sendBroadcast(org(1), M, 'from org1')
      await waitFor('both pins to wait in the chain\'s pool', async () => (await t.net.controls.pendingTransactions()) >= 2, { timeoutMs: 30_000, intervalMs: 100 })
      await sleep(500)
      expect(await stateOn(org(0), a), 'nothing is confirmed before its pin is mined').to.not.equal('confirmed')
      const head = await t.net.mine()
      await Promise.all([a, b].map((id) => waitConfirmed(t.net, id, { namespace: ns })))

      // Where each pin is, as the chain's own logs say (not as a member read them).
      const pins = await chainPins(t.net.description.chain)
      const pinOf = async (id: string): Promise<number> => {
        const batch = (await get<ApiMessage>(`${nsBase(org(2), ns)}/messages/${id}`)).body.batch
        const at = pins.findIndex((p) => p.batchId === batch)
        expect(at, `the pin of ${id} (batch ${batch})`).to.be.at.least(0)
        expect(pins.filter((p) => p.batchId === batch), `the pins of ${id}'s batch`).to.have.length(1)
        expect(pins[at]!.block, `${id}: in the one mined block`).to.equal(head)
        return at
      }
      const chainOrder = (await pinOf(a)) < (await pinOf(b)) ? [a, b] : [b, a]
      for (const m of ['org0', 'org1', 'org2']) expect(await ids(m, M), m).to.deep.equal(chainOrder)
    } finally {
      await t.net.mining(true)
    }
    await verifyOk()
  })

  describe('the same controls through npm run network -- <verb>', () => {
    const cli = (args: string[]): ReturnType<typeof networkCli> => networkCli(t.dir, args)

    it('status, hold and release by org name, mine, verify (exit 0), trace with org names', async () => {
      const status = await cli(['status'])
      expect(status.code, status.err).to.equal(0)
      expect(status.out).to.match(/org1\/node1\s+running\s+pid \d+/)
      expect(status.out).to.contain('chain mining on')

      const hold = await cli(['hold', 'org0', 'org1/node1'])
      expect(hold.code, hold.err).to.equal(0)
      expect(hold.out).to.contain('org0 holds its private deliveries to org1')
      expect((await t.net.controlsOf('org0')).exchange.held).to.deep.equal([{ to: 'org1' }])
      const release = await cli(['release', 'org0', 'org1'])
      expect(release.code, release.err).to.equal(0)
      expect((await t.net.controlsOf('org0')).exchange.held).to.deep.equal([])

      const mine = await cli(['mine', '2'])
      expect(mine.code, mine.err).to.equal(0)
      expect(mine.out).to.match(/mined 2 blocks; the head is block \d+/)

      const verify = await cli(['verify'])
      expect(verify.code, verify.out + verify.err).to.equal(0)
      expect(verify.out).to.contain('OK: every member agrees with the chain')

      const trace = await cli(['trace', m2])
      expect(trace.code, trace.err).to.equal(0)
      expect(trace.out).to.contain(`message ${m2} (namespace ${ns})`)
      expect(trace.out).to.match(/org0\/node0\s+confirmed/)
      expect(trace.out).to.match(/org2\/node2\s+not known here/)
      expect(trace.out).to.match(/timeline/)
      const json = await cli(['trace', m2, '--json'])
      expect((JSON.parse(json.out) as NetworkTrace).members.map((m) => m.org)).to.deep.equal(['org0', 'org1', 'org2'])

      const confirmed = await cli(['confirmed', 'org1', T, '--namespace', ns])
      expect(confirmed.out.trim().split('\n').map((l) => l.split(/\s+/)[0])).to.deep.equal([m1, m2, m4, m5])
      const wait = await cli(['wait', m5, '--namespace', ns])
      expect(wait.code, wait.err).to.equal(0)
      expect(wait.out).to.match(/org1\s+confirmed/)
    })

    it('pause and resume by the CLI; verify exits 1 naming a paused member; errors name the mistake', async () => {
      expect((await cli(['pause', 'org2'])).code).to.equal(0)
      try {
        expect(t.net.processes.find((p) => p.org === 'org2')!.state).to.equal('paused')
        const verify = await cli(['verify'])
        expect(verify.code).to.equal(1)
        expect(verify.out).to.match(/unreachable\s+org2 could not be read: org2 is paused/)
        const hold = await cli(['hold', 'org2', 'chain'])
        expect(hold.code).to.equal(1)
        expect(hold.err).to.contain('org2 is paused: resume it first')
      } finally {
        expect((await cli(['resume', 'org2'])).code).to.equal(0)
      }
      const unknown = await cli(['pause', 'org9'])
      expect(unknown.code).to.equal(1)
      expect(unknown.err).to.contain('unknown member "org9": the network in')
      expect(unknown.err).to.contain('has org0, org1, org2')
      const self = await cli(['hold', 'org1', 'org1'])
      expect(self.code).to.equal(1)
      expect(self.err).to.contain('from and to are the same member (org1)')
      const badMessage = await cli(['drop', 'org0', 'org1', '--message', 'not-a-uuid'])
      expect(badMessage.code).to.equal(1)
      expect(badMessage.err).to.match(/org0 refused POST \/admin\/v1\/exchange\/drop: 400/)
      const stranger = await cli(['trace', '00000000-0000-4000-8000-000000000000', '--namespace', ns])
      expect(stranger.code).to.equal(1)
      expect(stranger.err).to.contain('no member knows message 00000000-0000-4000-8000-000000000000')
      await verifyOk()
    })
  })
})
