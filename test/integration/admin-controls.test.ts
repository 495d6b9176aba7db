import { expect } from 'chai'
import { setTimeout as sleep } from 'node:timers/promises'
import type { MemberDescription } from '../../network/description.js'
import { sharedNetwork } from '../support/shared-network.js'
import { waitFor } from '../../network/process.js'
import { adminHeaders } from '../../network/admin-auth.js'
import { layout } from '../../network/layout.js'
import { get, messageReaching, nsBase, request, runId, send, type ApiChainEvent, type ApiMessage } from '../support/api.js'

interface ControlsView {
  exchange: { held: { to: string; message?: string; batch?: string }[]; dropped: { to: string; batch?: string; message?: string }[] }
  chain: { held: boolean }
  ipfs: { held: boolean }
}

/**
 * The admin routes on a real 3-member network (the local network turns them on): a member's deliveries to another
 * held and released, and a member's reading of the chain and of IPFS held and released. What is held is checked to
 * be missing for a while (long enough for it to have arrived otherwise), then to arrive after the release.
 */
describe('admin controls on a real 3-member network', function () {
  this.timeout(240_000)
  // Every hold is released by the test that made it, so the run's shared network serves (a failure leaves it held,
  // and its after hook then stops it for a fresh one).
  const t = sharedNetwork()
  const { members } = t
  // The controls ask for each member's admin token, which it keeps in its data folder in the state folder.
  const admin = (m: MemberDescription, path: string, body?: unknown) => request<ControlsView>('POST', `${m.api}/admin/v1${path}`, body ?? {}, adminHeaders(layout(t.dir), m.org))
  const controlsOf = (m: MemberDescription) => request<ControlsView>('GET', `${m.api}/admin/v1/controls`, undefined, adminHeaders(layout(t.dir), m.org))
  const run = runId()
  const ns = `admin-${run}`
  /** How long something held is watched not to arrive: several batch timeouts and blocks. */
  const WATCH_MS = 4_000

  /** The message as the member holds it: undefined while it is not there at all (a private one not delivered). */
  async function stateOn(m: MemberDescription, id: string): Promise<string | undefined> {
    const r = await get<ApiMessage>(`${nsBase(m, ns)}/messages/${id}`)
    return r.status === 200 ? r.body.state : undefined
  }

  it('every member serves the admin routes: GET controls, nothing held', async () => {
    for (const m of members) {
      const r = await controlsOf(m)
      expect(r.status, m.org).to.equal(200)
      expect(r.body).to.deep.equal({ exchange: { held: [], dropped: [] }, chain: { held: false }, ipfs: { held: false } })
    }
  })

  it('org0 holds its deliveries to org1: a private message is not confirmed on org1 until the release', async () => {
    const [org0, org1] = members
    const held = await admin(org0!, '/exchange/hold', { to: org1!.org })
    expect(held.status, JSON.stringify(held.body)).to.equal(200)
    expect(held.body.exchange.held).to.deep.equal([{ to: org1!.org }])

    const r = await request<ApiMessage>('POST', `${nsBase(org0!, ns)}/messages/private`, { header: { topics: [`p-${run}`] }, group: { members: [{ identity: org1!.org }] }, data: [{ value: { held: true } }] })
    expect(r.status, JSON.stringify(r.body)).to.equal(202)
    const id = r.body.header.id
    // The pin does not wait for delivery: the sender confirms its own message from the chain.
    await messageReaching(org0!, ns, id, ['confirmed'], 60_000)
    const until = Date.now() + WATCH_MS
    while (Date.now() < until) {
      expect(await stateOn(org1!, id), 'held on org0, the batch never reached org1').to.equal(undefined)
      await sleep(250)
    }

    const released = await admin(org0!, '/exchange/release', { to: org1!.org })
    expect(released.status).to.equal(200)
    expect(released.body.exchange.held).to.deep.equal([])
    const t0 = Date.now()
    const there = await messageReaching(org1!, ns, id, ['confirmed'], 30_000)
    expect(there.state).to.equal('confirmed')
    // Sent at the release, not after a retry's backoff.
    expect(Date.now() - t0).to.be.below(15_000)
  })

  it('org2 holds its reading of the chain: a broadcast is confirmed on org1, not on org2 until the release', async () => {
    const [org0, org1, org2] = members
    const held = await admin(org2!, '/chain/hold')
    expect(held.status).to.equal(200)
    expect(held.body.chain).to.deep.equal({ held: true })
    const m = await send(org0!, ns, `b-${run}`, { chainHeld: true })
    await messageReaching(org1!, ns, m.header.id, ['confirmed'], 60_000)
    const until = Date.now() + WATCH_MS
    while (Date.now() < until) {
      expect(await stateOn(org2!, m.header.id), 'org2 has not read the pin').to.equal(undefined)
      await sleep(250)
    }
    const status = await get<{ chain: { headBlock?: number; lastProcessedBlock: number } }>(`${nsBase(org2!, ns)}/status`)
    expect(status.body.chain.headBlock, 'org2 falls behind the chain').to.be.greaterThan(status.body.chain.lastProcessedBlock)

    expect((await admin(org2!, '/chain/release')).body.chain).to.deep.equal({ held: false })
    expect((await messageReaching(org2!, ns, m.header.id, ['confirmed'], 30_000)).state).to.equal('confirmed')
  })

  it('org2 holds its reading of IPFS: the broadcast\'s pin is read but its batch is not fetched until the release', async () => {
    const [org0, org1, org2] = members
    expect((await admin(org2!, '/ipfs/hold')).body.ipfs).to.deep.equal({ held: true })
    const m = await send(org0!, ns, `i-${run}`, { ipfsHeld: true })
    const batchId = (await messageReaching(org1!, ns, m.header.id, ['confirmed'], 60_000)).batch!
    const pinsOf = async (): Promise<number> => (await get<ApiChainEvent[]>(`${org2!.api}/api/v1/blockchainevents?batch=${batchId}`)).body.length
    await waitFor(`org2 to read the pin of batch ${batchId}`, async () => (await pinsOf()) === 1, { timeoutMs: 30_000, intervalMs: 150 })
    const until = Date.now() + WATCH_MS
    while (Date.now() < until) {
      expect(await pinsOf(), 'org2 has read the pin').to.equal(1)
      expect((await get(`${nsBase(org2!, ns)}/batches/${batchId}`)).status, 'org2 has not fetched the batch').to.equal(404)
      expect(await stateOn(org2!, m.header.id), 'nor holds its message').to.equal(undefined)
      await sleep(250)
    }
    expect((await admin(org2!, '/ipfs/release')).body.ipfs).to.deep.equal({ held: false })
    expect((await messageReaching(org2!, ns, m.header.id, ['confirmed'], 30_000)).state).to.equal('confirmed')
    const r = await controlsOf(org2!)
    expect(r.body).to.deep.equal({ exchange: { held: [], dropped: [] }, chain: { held: false }, ipfs: { held: false } })
  })
})
