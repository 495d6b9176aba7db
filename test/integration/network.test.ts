import { expect } from 'chai'
import WebSocket from 'ws'
import { createHash, randomUUID } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { Wallet } from 'ethers'
import { fundAccounts } from '../../network/chain/deploy.js'
import { createChain } from '../../node/chain/index.js'
import type { Chain } from '../../node/chain/types.js'
import { layout } from '../../network/layout.js'
import { waitFor } from '../../network/process.js'
import { getJson, testNetwork } from '../support/network.js'
import { chainPins } from '../support/chain-order.js'
import type { BatchId, Hash, TxId } from '../../node/core/ids.js'

interface Status {
  org: { name: string; did: string; key: string }
  node: { name: string }
  chain: { connected: boolean; contract: string; lastProcessedBlock: number }
  ipfs: { connected: boolean }
  version: string
}
interface ChainEvent {
  output: { author: string; batchHash: string; payloadRef: string; contexts: string[]; uuids: string; action: string }
  info: { blockNumber: string }
  tx: { id: string }
  batch: string
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex') as Hash

describe('a 3-member network', function () {
  this.timeout(180_000)
  let t: Awaited<ReturnType<typeof testNetwork>>
  let pinner: Chain | undefined

  before(async () => {
    t = await testNetwork('net3')
  })

  after(async () => {
    await pinner?.stop()
    const alive = await t?.stop()
    expect(alive ?? [], 'processes left alive after the network stopped').to.deep.equal([])
  })

  it('writes network.json with the chain, IPFS and every member', async () => {
    const d = JSON.parse(readFileSync(layout(t.dir).networkJson, 'utf8')) as typeof t.net.description
    expect(d.chain.chainId).to.equal(31337)
    expect(d.chain.contract).to.match(/^0x[0-9a-f]{40}$/)
    expect(d.members.map((m) => m.org)).to.deep.equal(['org0', 'org1', 'org2'])
    for (const m of d.members) {
      expect(m.did).to.equal(`did:firefly:org/${m.org}`)
      // Every URL it prints answers: the event socket opens, the console's page loads.
      expect(m.ws).to.equal(`${m.api.replace(/^http/, 'ws')}/ws`)
      await new Promise<void>((resolve, reject) => {
        const ws = new WebSocket(`${m.ws}?namespace=default&ephemeral`)
        ws.once('open', () => {
          ws.close()
          resolve()
        })
        ws.once('error', reject)
      })
      expect(m.ui).to.equal(`${m.api}/ui/`)
      const page = await fetch(m.ui!)
      expect([page.status, page.headers.get('content-type')]).to.deep.equal([200, 'text/html; charset=utf-8'])
      await page.text()
      // The API page (Swagger UI over /api/openapi.json), served from the same build.
      expect(m.apiPage).to.equal(`${m.api}/api`)
      const apiPage = await fetch(m.apiPage!)
      expect([apiPage.status, apiPage.headers.get('content-type')]).to.deep.equal([200, 'text/html; charset=utf-8'])
      expect(await apiPage.text()).to.include('/ui/assets/api-')
      expect(m.p2p).to.match(/^https:\/\/127\.0\.0\.1:\d+$/)
      expect(m.key).to.match(/^0x[0-9a-f]{40}$/)
    }
  })

  it('every member answers /status with its org, node, chain and IPFS', async () => {
    for (const m of t.net.description.members) {
      await waitFor(`${m.org} connected`, async () => {
        const { body } = await getJson<Status>(`${m.api}/api/v1/status`)
        return body.chain.connected && body.ipfs.connected
      })
      const { status, body } = await getJson<Status>(`${m.api}/api/v1/status`)
      expect(status).to.equal(200)
      expect(body.org).to.include({ name: m.org, did: m.did, key: m.key })
      expect(body.node.name).to.equal(m.node)
      expect(body.chain.contract).to.equal(t.net.description.chain.contract)
      expect(body.chain.lastProcessedBlock).to.be.at.least(t.net.description.chain.firstBlock)
      expect(body.version).to.match(/^\d+\.\d+\.\d+/)
      const namespaced = await getJson<Status>(`${m.api}/api/v1/namespaces/default/status`)
      expect(namespaced.body.org.name).to.equal(m.org)
    }
  })

  it('one member pins a batch and the other two observe it through their chain seam', async () => {
    const [, org1, org2] = t.net.description.members
    // A test-only pinner with its own funded key: the member nodes sign with theirs, and two submitters on one
    // key would race for nonces.
    const wallet = Wallet.createRandom()
    await fundAccounts(t.net.description.chain.rpc, [wallet.address], '1')
    const key = wallet.privateKey
    const head = (await getJson<Status>(`${org1!.api}/api/v1/status`)).body.chain.lastProcessedBlock
    pinner = createChain({
      rpc: t.net.description.chain.rpc,
      contract: t.net.description.chain.contract,
      privateKey: key,
      fromBlock: head + 1,
      onEvents: async () => {},
      log: () => {},
    })
    pinner.start()
    const txId = randomUUID() as TxId
    const batchId = randomUUID() as BatchId
    const batchHash = sha256('a batch')
    const contexts = [sha256('topicA'), sha256('topicB')]
    await pinner.submitPinBatch({ txId, batchId, batchHash, payloadRef: 'QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o', contexts })

    for (const m of [org1!, org2!]) {
      let seen: ChainEvent | undefined
      await waitFor(`${m.org} to see the batch`, async () => {
        const { body } = await getJson<ChainEvent[]>(`${m.api}/api/v1/namespaces/default/blockchainevents?batch=${batchId}`)
        seen = body[0]
        return seen !== undefined
      })
      expect(seen!.batch).to.equal(batchId)
      expect(seen!.tx.id).to.equal(txId)
      expect(seen!.output.author).to.equal(wallet.address.toLowerCase())
      expect(seen!.output.action).to.equal('firefly:batch_pin')
      expect(seen!.output.batchHash).to.equal('0x' + batchHash)
      expect(seen!.output.payloadRef).to.equal('QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o')
      expect(seen!.output.contexts).to.deep.equal(contexts.map((c) => '0x' + c))
      expect(seen!.output.uuids).to.equal('0x' + txId.replace(/-/g, '') + batchId.replace(/-/g, ''))
    }
  })

  it('a member killed with SIGKILL resumes from its stored block and misses nothing', async () => {
    const org2 = t.net.description.members[2]!
    // The newest pin before the kill, which org2 has stored: a restart from its stored block starts after it.
    const before = (await chainPins(t.net.description.chain)).at(-1)!
    expect(before.block, 'a pin after the first block').to.be.greaterThan(t.net.description.chain.firstBlock)
    await waitFor('org2 to have processed the newest pin', async () => (await getJson<Status>(`${org2.api}/api/v1/status`)).body.chain.lastProcessedBlock >= before.block)
    const logFile = t.net.processes.find((p) => p.name === org2.node)!.logFile
    const logFrom = statSync(logFile).size
    await t.net.kill(org2.node, 'SIGKILL')
    const batchId = randomUUID() as BatchId
    const whileDown = await pinner!.submitPinBatch({ txId: randomUUID() as TxId, batchId, batchHash: sha256('while down'), payloadRef: '', contexts: [sha256('x')] })
    await t.net.restart(org2.node)
    await waitFor('the restarted member to catch up', async () => {
      const { body } = await getJson<ChainEvent[]>(`${org2.api}/api/v1/blockchainevents?batch=${batchId}`)
      return body.length === 1
    })
    // Where its chain follower started this time, as it logs it: after what it had stored, not from the first block.
    const started = [...readFileSync(logFile).subarray(logFrom).toString('utf8').matchAll(/chain: following .* from block (\d+)/g)].map((x) => Number(x[1]))
    expect(started, 'the chain follower started after the restart').to.not.be.empty
    expect(started[0], `from its stored block: after block ${before.block}, which it had processed`).to.be.greaterThan(before.block)
    expect(started[0], `not past block ${whileDown.blockNumber}, pinned while it was down`).to.be.at.most(whileDown.blockNumber)
    const { body: all } = await getJson<ChainEvent[]>(`${org2.api}/api/v1/blockchainevents?limit=1000`)
    const ids = all.map((e) => e.batch)
    expect(new Set(ids).size, 'no event recorded twice').to.equal(ids.length)
    // Everything org0 read is also on org2, whatever happened while org2 was down.
    const { body: reference } = await getJson<ChainEvent[]>(`${t.net.description.members[0]!.api}/api/v1/blockchainevents?limit=1000`)
    expect([...ids].sort()).to.deep.equal(reference.map((e) => e.batch).sort())
  })

  it('answers unknown routes and bad queries with a JSON 4xx', async () => {
    const m = t.net.description.members[0]!
    const notFound = await getJson<{ error: string }>(`${m.api}/api/v1/nothing-here`)
    expect(notFound.status).to.equal(404)
    expect(notFound.body.error).to.match(/^NOT_FOUND: /)
    const badLimit = await getJson<{ error: string }>(`${m.api}/api/v1/blockchainevents?limit=lots`)
    expect(badLimit.status).to.equal(400)
    expect(badLimit.body.error).to.contain('limit')
    const badId = await getJson<{ error: string }>(`${m.api}/api/v1/blockchainevents?batch=not-a-uuid`)
    expect(badId.status).to.equal(400)
    const badNs = await getJson<{ error: string }>(`${m.api}/api/v1/namespaces/-bad-/status`)
    expect(badNs.status).to.equal(400)
  })
})

/**
 * The largest network the suite affords: every member registers through the chain and, by the time the start
 * returns, lists every other member's org and node, each node under its own org and reachable at the p2p endpoint
 * network.json names.
 */
describe('a 10-member network', function () {
  this.timeout(300_000)
  const MEMBERS = 10
  let t: Awaited<ReturnType<typeof testNetwork>> | undefined

  before(async () => {
    t = await testNetwork('net10', { members: MEMBERS })
  })

  after(async () => {
    const alive = await t?.stop()
    expect(alive ?? [], 'processes left alive after the network stopped').to.deep.equal([])
  })

  it('registers every member, and every member sees every org and node', async () => {
    const members = t!.net.description.members
    expect(members.map((m) => m.org)).to.deep.equal(Array.from({ length: MEMBERS }, (_, i) => `org${i}`))
    interface Identity {
      id: string
      did: string
      name: string
      parent?: string
      profile?: { endpoint?: string }
    }
    for (const m of members) {
      const { body: status } = await getJson<{ org: { registered: boolean }; node: { registered: boolean } }>(`${m.api}/api/v1/status`)
      expect([status.org.registered, status.node.registered], `${m.org} registered`).to.deep.equal([true, true])
      const { body: orgs } = await getJson<Identity[]>(`${m.api}/api/v1/network/organizations?limit=100`)
      const { body: nodes } = await getJson<Identity[]>(`${m.api}/api/v1/network/nodes?limit=100`)
      expect(orgs.map((o) => o.did).sort(), `the orgs ${m.org} lists`).to.deep.equal(members.map((o) => o.did).sort())
      expect(nodes.map((n) => n.did).sort(), `the nodes ${m.org} lists`).to.deep.equal(members.map((o) => `did:firefly:node/${o.node}`).sort())
      for (const o of members) {
        const org = orgs.find((i) => i.did === o.did)!
        const node = nodes.find((i) => i.did === `did:firefly:node/${o.node}`)!
        expect(node.parent, `${m.org} sees ${o.node} under ${o.org}`).to.equal(org.id)
        expect(node.profile?.endpoint, `${m.org} knows ${o.node}'s p2p endpoint`).to.equal(o.p2p)
      }
    }
  })
})
