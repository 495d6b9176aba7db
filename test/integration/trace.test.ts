import { expect } from 'chai'
import type { MemberDescription } from '../../network/description.js'
import { timestampSortKey } from '../../node/core/time.js'
import { sharedNetwork } from '../support/shared-network.js'
import { get, messageReaching, nsBase, request, runId, send, type ApiMessage } from '../support/api.js'

interface Step {
  at: string
  step: string
  detail: string
  batch?: string
  cid?: string
  peer?: string
  org?: string
  state?: string
  tx?: string
  chainTx?: string
  block?: number
  logIndex?: number
}
interface Trace {
  message: string
  org: string
  node: string
  state: string
  timeline: Step[]
  waiting?: { reason: string; detail: string }
}

const TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/

describe('message trace on a real 3-member network', function () {
  this.timeout(120_000)
  const t = sharedNetwork()
  const { members } = t
  const run = runId()
  const ns = `trace-${run}`

  const traceOf = async (m: MemberDescription, id: string, base = nsBase(m, ns)): Promise<{ status: number; body: Trace }> => get<Trace>(`${base}/messages/${id}/trace`)

  /** The steps named, in the timeline's order, each with a timestamp, the whole timeline oldest first. */
  function expectSteps(trace: Trace, names: string[]): Map<string, Step> {
    const keys = trace.timeline.map((s) => timestampSortKey(s.at))
    expect(keys, `${trace.org}: oldest first`).to.deep.equal([...keys].sort())
    for (const s of trace.timeline) expect(s.at, `${trace.org} ${s.step}`).to.match(TIME_RE)
    const named = trace.timeline.filter((s) => names.includes(s.step))
    expect(named.map((s) => s.step), `${trace.org}: ${JSON.stringify(trace.timeline.map((s) => s.step))}`).to.deep.equal(names)
    return new Map(named.map((s) => [s.step, s]))
  }

  it("a confirmed broadcast's trace: accepted, sealed, uploaded, pinned, mined, confirmed on the sender; mined, received, confirmed on a receiver", async () => {
    const [org0, org1] = members
    const sent = await send(org0!, ns, `t-${run}`, { hello: run })
    const id = sent.header.id
    await messageReaching(org0!, ns, id, ['confirmed'], 60_000)
    const there = await messageReaching(org1!, ns, id, ['confirmed'], 60_000)

    const sender = await traceOf(org0!, id)
    expect(sender.status).to.equal(200)
    expect(sender.body).to.include({ message: id, org: org0!.org, node: org0!.node, state: 'confirmed' })
    expect(sender.body.waiting).to.equal(undefined)
    const s = expectSteps(sender.body, ['accepted', 'sealed', 'uploaded', 'pinned', 'mined', 'confirmed'])
    expect(s.get('accepted')!.at).to.equal(sent.header.created)
    const batch = s.get('sealed')!.batch
    expect(batch).to.equal(there.batch)
    expect(s.get('uploaded')).to.include({ batch })
    expect(s.get('uploaded')!.cid).to.be.a('string').and.not.equal('')
    expect(s.get('pinned')!.chainTx).to.match(/^0x[0-9a-f]{64}$/)
    expect(s.get('mined')).to.include({ batch, chainTx: s.get('pinned')!.chainTx })
    expect(s.get('mined')!.block).to.be.a('number')
    expect(s.get('mined')!.logIndex).to.be.a('number')

    const receiver = await traceOf(org1!, id)
    expect(receiver.status).to.equal(200)
    expect(receiver.body).to.include({ message: id, org: org1!.org, state: 'confirmed' })
    expect(receiver.body.waiting).to.equal(undefined)
    const r = expectSteps(receiver.body, ['mined', 'received', 'confirmed'])
    expect(receiver.body.timeline.map((x) => x.step), 'a receiver did not accept, seal, upload or pin it').to.not.include.members(['accepted', 'sealed', 'uploaded', 'pinned'])
    expect(r.get('mined')).to.include({ batch, block: s.get('mined')!.block, logIndex: s.get('mined')!.logIndex, chainTx: s.get('mined')!.chainTx })
    expect(r.get('received')).to.include({ batch, cid: s.get('uploaded')!.cid })
    expect(r.get('confirmed')!.at).to.equal(there.confirmed)
  })

  it('a private message: the sender has a delivery step per peer; the receiver received it from the sender node', async () => {
    const [org0, org1] = members
    const r = await request<ApiMessage>('POST', `${nsBase(org0!, ns)}/messages/private`, { header: { topics: [`p-${run}`] }, group: { members: [{ identity: org1!.org }] }, data: [{ value: { p: run } }] })
    expect(r.status, JSON.stringify(r.body)).to.equal(202)
    const id = r.body.header.id
    await messageReaching(org0!, ns, id, ['confirmed'], 60_000)
    await messageReaching(org1!, ns, id, ['confirmed'], 60_000)
    // The delivery is acknowledged independently of the sender's own confirmation.
    let sender: Trace | undefined
    for (let i = 0; i < 100; i++) {
      sender = (await traceOf(org0!, id)).body
      if (sender.timeline.some((x) => x.step === 'delivered' && x.state === 'done')) break
      await new Promise((res) => setTimeout(res, 100))
    }
    // The pin does not wait for the delivery (FireFly's order): the delivery's step falls where its time puts it.
    const s = expectSteps(sender!, ['accepted', 'sealed', 'pinned', 'mined', 'confirmed'])
    const delivered = sender!.timeline.filter((x) => x.step === 'delivered')
    expect(delivered.map((x) => [x.peer, x.org, x.state])).to.deep.equal([[`did:firefly:node/${org1!.node}`, org1!.org, 'done']])
    expect(timestampSortKey(delivered[0]!.at) > timestampSortKey(s.get('sealed')!.at)).to.equal(true)
    const receiver = (await traceOf(org1!, id)).body
    const rec = expectSteps(receiver, ['received', 'confirmed'])
    expect(rec.get('received')).to.include({ org: org0!.org, batch: s.get('sealed')!.batch })
  })

  it('the default namespace at /api/v1; 404 for a message this member does not hold; 400 for a bad id', async () => {
    const [org0, , org2] = members
    const sent = await send(org0!, 'default', `d-${run}`, { d: run })
    const got = await traceOf(org0!, sent.header.id, `${org0!.api}/api/v1`)
    expect(got.status).to.equal(200)
    expect(got.body.message).to.equal(sent.header.id)
    expect((await traceOf(org2!, '6f1b3c0e-1b2a-4c3d-8e4f-5a6b7c8d9e0f')).status).to.equal(404)
    expect((await traceOf(org0!, sent.header.id, nsBase(org0!, `other-${run}`))).status, 'another namespace').to.equal(404)
    expect((await traceOf(org0!, 'not-a-uuid')).status).to.equal(400)
  })
})
