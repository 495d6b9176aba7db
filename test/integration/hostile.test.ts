import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { readDescription, readPids } from '../../network/description.js'
import { layout } from '../../network/layout.js'
import { isAlive, projectRoot } from '../../network/process.js'
import { rpcCall } from '../../network/probe.js'
import { waitConfirmed } from '../../network/suite.js'
import { formatVerify } from '../../network/verify.js'
import type { MemberDescription } from '../../network/description.js'
import { get, messageReaching, nsBase, request, runId, send, type ApiMessage } from '../support/api.js'
import { LAUNCHER, suiteNetwork } from '../support/network.js'
import { waitUntil } from '../support/wait.js'

/**
 * One test per threat of a hostile member (DESIGN section 9), each made with the network's own `rogue` control:
 * after the attack, the honest messages it aimed at confirm on every member, and verify passes. One network for the
 * file; each test keeps to topics of its own, and the last one (a name claimed ahead of the network's growth) stops it.
 */
describe('a hostile member cannot block a topic, split the members or take a name', function () {
  this.timeout(120_000)
  const t = suiteNetwork('hostile', { members: 3 })
  const run = runId()
  const ns = `hostile-${run}`
  const SETTLE_MS = 20_000
  let org0: MemberDescription, org1: MemberDescription, org2: MemberDescription

  before(() => {
    ;[org0, org1, org2] = t.members as [MemberDescription, MemberDescription, MemberDescription]
  })

  async function verified(): Promise<void> {
    const r = await t.net.verify({ namespaces: [ns] })
    expect(r.ok, formatVerify(r)).to.equal(true)
  }

  async function sendPrivate(from: MemberDescription, to: MemberDescription, topic: string, value: unknown): Promise<ApiMessage> {
    const r = await request<ApiMessage>('POST', `${nsBase(from, ns)}/messages/private`, { header: { topics: [topic] }, group: { members: [{ identity: to.org }] }, data: [{ value }] })
    expect(r.status, JSON.stringify(r.body)).to.equal(202)
    return r.body
  }

  /** Every message `m` holds under `id` (two when a member reused it). */
  const rowsOf = async (m: MemberDescription, id: string): Promise<ApiMessage[]> => (await get<ApiMessage[]>(`${nsBase(m, ns)}/messages?id=${id}`)).body

  const confirmedEverywhere = (id: string, members?: string[]) => waitConfirmed(t.net, id, { namespace: ns, timeoutMs: SETTLE_MS, ...(members ? { members } : {}) })

  /** Where the chain put a transaction: its block, then its place in the block. */
  async function placeOf(txHash: string): Promise<[number, number]> {
    const r = await rpcCall<{ blockNumber: string; transactionIndex: string }>(t.net.description.chain.rpc, 'eth_getTransactionReceipt', [txHash])
    return [Number(r!.blockNumber), Number(r!.transactionIndex)]
  }

  it('a garbage pin from an unregistered chain account holds no topic: later broadcasts on it confirm everywhere', async () => {
    const topic = `orders-${run}`
    const r = await t.net.rogue({ account: 15 }).garbagePin({ topic })
    expect(r.pin.signer).to.equal('0xcd3b766ccdd6ae721141f452c550ca635964ce71')
    expect(r.pin.block, 'the garbage pin is mined').to.be.a('number')
    const first = await send(org0, ns, topic, 'after a garbage pin')
    const second = await send(org1, ns, topic, 'and another')
    await confirmedEverywhere(first.header.id)
    await confirmedEverywhere(second.header.id)
    await verified()
  })

  it("a squatted pin of a group's private batch neither rejects the honest message nor freezes its author's nonce", async () => {
    const topic = `squat-${run}`
    await t.net.mining(false)
    let honest!: ApiMessage
    try {
      honest = await sendPrivate(org0, org1, topic, 'honest')
      // As a member of the group, org1 learns the batch id from the private batch, which travels before its pin.
      const held = await messageReaching(org1, ns, honest.header.id, ['pending'], SETTLE_MS)
      const squat = await t.net.rogue('org1').squatPin({ batch: held.batch! })
      expect(squat.victim, 'the honest pin was in the pool to be outbid').to.not.equal(undefined)
      await t.net.mining(true)
      const [squatAt, honestAt] = await Promise.all([placeOf(squat.pin.txHash), placeOf(squat.victim!.txHash)])
      const before = squatAt[0] < honestAt[0] || (squatAt[0] === honestAt[0] && squatAt[1] < honestAt[1])
      expect(before, `the squat (block ${squatAt[0]}, tx ${squatAt[1]}) is mined before the honest pin (block ${honestAt[0]}, tx ${honestAt[1]})`).to.equal(true)
    } finally {
      await t.net.mining(true)
    }
    await confirmedEverywhere(honest.header.id)
    const next = await sendPrivate(org0, org1, topic, "the author's next message in that group")
    await confirmedEverywhere(next.header.id)
    await verified()
  })

  it('a broadcast id squatted from the pool with a bad payload reference is still fetched and confirmed', async () => {
    const topic = `squat-b-${run}`
    await t.net.mining(false)
    let honest!: ApiMessage
    try {
      honest = await send(org0, ns, topic, 'honest broadcast')
      const squat = await t.net.rogue('org1').squatPin({ next: true, payloadRef: 'not-a-reference' })
      expect(squat.victim?.signer).to.equal(org0.key)
    } finally {
      await t.net.mining(true)
    }
    await confirmedEverywhere(honest.header.id)
    await confirmedEverywhere((await send(org0, ns, topic, 'the next one')).header.id)
    await verified()
  })

  it("a private batch delivered under a broadcast's id does not stop the victim fetching the broadcast", async () => {
    const topic = `takeover-${run}`
    await t.net.holdReading('org0', 'ipfs')
    let honest!: ApiMessage
    try {
      honest = await send(org2, ns, topic, 'a broadcast org0 has not fetched yet')
      await confirmedEverywhere(honest.header.id, ['org1', 'org2'])
      const batch = (await messageReaching(org1, ns, honest.header.id, ['confirmed'])).batch!
      await t.net.rogue('org1').deliverUnder({ victim: 'org0', batch, namespace: ns })
    } finally {
      await t.net.releaseReading('org0', 'ipfs')
    }
    await confirmedEverywhere(honest.header.id)
    await verified()
  })

  it("a copy of a broadcast's data item with another datatype, held first by one member, decides nothing of the broadcast", async () => {
    const topic = `copy-${run}`
    // org0 fetches no broadcast payload: it holds the copy org1 delivers before the honest batch.
    await t.net.holdReading('org0', 'ipfs')
    let honest!: ApiMessage
    try {
      honest = await send(org2, ns, topic, 'a value org1 copies')
      await confirmedEverywhere(honest.header.id, ['org1', 'org2'])
      // The same data id and value (so the same hash), carried with a datatype nobody defined.
      const copy = await t.net.rogue('org1').reuseId({ message: honest.header.id, namespace: ns, datatype: { name: 'nosuch', version: '1' }, to: ['org0'] })
      expect(copy.deliveries.map((d) => [d.to, d.stored]), JSON.stringify(copy.deliveries)).to.deep.equal([
        ['org1', true],
        ['org0', true],
      ])
    } finally {
      await t.net.releaseReading('org0', 'ipfs')
    }
    const states = await confirmedEverywhere(honest.header.id)
    expect(t.members.map((m) => [m.org, states[m.org]?.state, states[m.org]?.rejectReason]), 'the broadcast decided by the data it carried').to.deep.equal(t.members.map((m) => [m.org, 'confirmed', undefined]))
    for (const m of t.members) {
      const data = (await get<{ id: string; datatype?: unknown }[]>(`${nsBase(m, ns)}/messages/${honest.header.id}/data`)).body
      expect(data.map((d) => [d.id, d.datatype]), `${m.org}: the data the broadcast carried`).to.deep.equal([[honest.data[0]!.id, undefined]])
    }
    await verified()
  })

  it("a member's message under an honest message's id, held first by one member, gets one verdict everywhere and takes nothing", async () => {
    const topic = `reuse-${run}`
    // The group first, known to all: a batch of a group a member does not know yet is sent again later, not stored.
    const group = { members: [{ identity: org1.org }, { identity: org2.org }] }
    const first = await request<ApiMessage>('POST', `${nsBase(org0, ns)}/messages/private`, { header: { topics: [`${topic}-first`] }, group, data: [{ value: 'first' }] })
    expect(first.status, JSON.stringify(first.body)).to.equal(202)
    await confirmedEverywhere(first.body.header.id)
    // org2 reads no pin, and org0's deliveries to it wait: it holds the reusing batch before the honest one.
    await t.net.holdReading('org2', 'chain')
    await t.net.hold({ from: 'org0', to: 'org2' })
    let honest!: ApiMessage
    let reuse!: Awaited<ReturnType<ReturnType<typeof t.net.rogue>['reuseId']>>
    try {
      const r = await request<ApiMessage>('POST', `${nsBase(org0, ns)}/messages/private`, { header: { topics: [topic] }, group, data: [{ value: 'honest' }] })
      expect(r.status, JSON.stringify(r.body)).to.equal(202)
      honest = r.body
      await confirmedEverywhere(honest.header.id, ['org0', 'org1'])
      // org1 learnt the id from the delivery; it pins a message of its own under it, delivered to the group first.
      reuse = await t.net.rogue('org1').reuseId({ message: honest.header.id, namespace: ns })
      expect(reuse.deliveries.map((d) => [d.to, d.stored]), JSON.stringify(reuse.deliveries)).to.deep.equal([
        ['org0', true],
        ['org1', true],
        ['org2', true],
      ])
      // Only now does the honest batch reach org2: stored beside the other, not refused.
      await t.net.release({ from: 'org0', to: 'org2' })
      await waitUntil(`org2 to hold both messages of id ${honest.header.id}`, async () => (await rowsOf(org2, honest.header.id)).length === 2, { timeoutMs: SETTLE_MS })
    } finally {
      await t.net.release({ from: 'org0', to: 'org2' })
      await t.net.releaseReading('org2', 'chain')
    }
    await confirmedEverywhere(honest.header.id)
    for (const m of [org0, org1, org2]) {
      await waitUntil(`${m.org} to decide both messages of id ${honest.header.id}`, async () => (await rowsOf(m, honest.header.id)).every((x) => x.state !== 'pending'), { timeoutMs: SETTLE_MS })
      const rows = new Map((await rowsOf(m, honest.header.id)).map((x) => [x.hash, x]))
      expect(rows.get(honest.hash)?.state, `${m.org}: the honest message, pinned first`).to.equal('confirmed')
      // Decided by its own pins, batch and data, like any message: the same verdict on every member.
      expect(rows.get(reuse.hash)?.state, `${m.org}: the one pinned later under its id`).to.equal('confirmed')
      expect((await get<ApiMessage>(`${nsBase(m, ns)}/messages/${honest.header.id}`)).body.hash, `${m.org}: the id alone names the one pinned first`).to.equal(honest.hash)
      expect((await get<ApiMessage>(`${nsBase(m, ns)}/messages/${honest.header.id}?hash=${reuse.hash}`)).body.hash).to.equal(reuse.hash)
    }
    await verified()
  })

  it('a private batch its author pins again as a broadcast of junk is confirmed alike where it was held and where the junk was refused first', async () => {
    // org0 holds its batch before the pins; org1 and org2 fetch and refuse the junk first, and are delivered it only then.
    const r = await t.net.rogue('org0').repinPrivate({ first: ['org0'], namespace: ns })
    expect(r.deliveries.filter((d) => !d.stored), 'every member takes the batch').to.deep.equal([])
    await confirmedEverywhere(r.message)
    await verified()
  })

  it("a group pairing an org with another org's node is refused by every member", async () => {
    const r = await t.net.rogue('org1').foreignGroup({ org: 'org2', node: 'node1', namespace: ns })
    expect(r.paired).to.deep.equal({ org: 'org2', node: 'node1' })
    for (const m of t.members) {
      const delivery = r.deliveries.find((d) => d.to === m.org)!
      // Refused on delivery or stored and then rejected: either way for the pairing, not for some other fault.
      if (delivery.stored) {
        const decided = await messageReaching(m, ns, r.groupinit, ['confirmed', 'rejected'], SETTLE_MS)
        expect(decided.state, `${m.org} decided the groupinit`).to.equal('rejected')
      } else {
        expect(delivery.refusal, `${m.org} refused the batch for its pairing`).to.contain('belongs to')
      }
      expect((await get(`${nsBase(m, ns)}/groups/${r.group}`)).status, `${m.org} holds no such group`).to.equal(404)
    }
    await verified()
  })

  it('blobs nothing refers to are refused past the quota, by name', async () => {
    // org0 takes at most 4 MiB of such blobs from each peer org (quotas.unreferencedBlobBytesPerOrg, 1 GiB by
    // default): lowered, so that passing it costs little. Its config is read at its start.
    const MiB = 1024 * 1024
    const config = layout(t.dir).member('org0').config
    const cfg = JSON.parse(readFileSync(config, 'utf8')) as { quotas?: Record<string, number> }
    writeFileSync(config, JSON.stringify({ ...cfg, quotas: { ...cfg.quotas, unreferencedBlobBytesPerOrg: 4 * MiB } }, null, 2))
    await t.net.restart('org0')
    const r = await t.net.rogue('org1').floodBlobs({ to: 'org0', bytes: 6 * MiB, count: 3 })
    expect(r.stored, 'the blobs within the quota are taken').to.be.greaterThan(0)
    expect(r.refused, `${r.stored} stored of ${r.blobs}`).to.be.greaterThan(0)
    expect(r.refusal).to.contain('quotas.unreferencedBlobBytesPerOrg')
    // The flood takes nothing from honest traffic.
    await confirmedEverywhere((await send(org1, ns, `after-flood-${run}`, 'still served')).header.id)
    await verified()
  })

  it('a name claimed on chain by an unregistered key makes network:up refuse to grow the network, starting nothing', async () => {
    const claim = await t.net.rogue({ account: 16 }).claimName()
    expect(claim.name).to.equal('org3')
    for (const m of t.members) {
      await waitUntil(`${m.org} to know the claimed org3`, async () => (await get(`${m.api}/api/v1/network/organizations/org3`)).status === 200, { timeoutMs: SETTLE_MS })
    }
    await verified()

    const L = layout(t.dir)
    await t.net.stop()
    const child = spawn(process.execPath, [LAUNCHER, 'up', '--dir', t.dir, '--members', '4'], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d: Buffer) => (output += d.toString()))
    child.stderr.on('data', (d: Buffer) => (output += d.toString()))
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)))
    // It must refuse before starting anything: one still starting after this long is stopped (SIGTERM stops what it
    // started) and fails the test.
    let capped = false
    const cap = setTimeout(() => {
      capped = true
      child.kill('SIGTERM')
    }, 30_000)
    let code: number | null
    try {
      code = await exited
    } finally {
      clearTimeout(cap)
    }
    expect(capped, `network:up did not refuse: it was still starting the network after 30 s; it printed:\n${output}`).to.equal(false)
    expect(code, `network:up should refuse; it printed:\n${output}`).to.not.equal(0)
    expect(output).to.contain(`did:firefly:org/org3 is already pinned on chain by ${claim.pin.signer}`)
    expect(existsSync(L.log('node3')), 'the new member was never started').to.equal(false)
    expect(readPids(L.pidsJson).processes.filter((p) => isAlive(p.pid)), 'nothing left running').to.deep.equal([])
    expect(readDescription(L.networkJson)?.members.map((m) => m.org)).to.deep.equal(['org0', 'org1', 'org2'])
  })
})
