import { expect } from 'chai'
import { localCall } from '../../../../support/local-http.js'
import { apiSuite } from '../../../../support/api-suite.js'
import type { NodeStatus } from '../../../../../node/services.js'

const CONTRACT = '0x' + 'c0'.repeat(20)

/** A member's status as node.ts answers it, with the parts `status/multiparty` reads. */
function status(over: { orgRegistered: boolean; nodeRegistered: boolean; chain: Partial<NodeStatus['chain']> }): NodeStatus {
  return {
    org: { name: 'org0', did: 'did:firefly:org/org0', key: '0x', registered: over.orgRegistered },
    node: { name: 'node0', did: 'did:firefly:node/node0', registered: over.nodeRegistered, p2p: 'https://127.0.0.1:1' },
    chain: { connected: true, rpc: 'http://127.0.0.1:1', contract: CONTRACT, lastProcessedBlock: 0, ...over.chain },
    multiparty: { enabled: true, contract: { active: { index: 0, location: { address: CONTRACT }, firstEvent: 3 } } },
  } as NodeStatus
}

describe('status: API', () => {
  let current = status({ orgRegistered: true, nodeRegistered: true, chain: { networkVersion: 2, headBlock: 9, lastProcessedBlock: 9 } })
  const t = apiSuite('parley-status-api-', () => ({ status: async () => current }))
  const multiparty = async () => {
    const r = await localCall(t.port, 'GET', '/api/v1/namespaces/default/status/multiparty')
    expect(r.status, r.text).to.equal(200)
    return r.json
  }

  it("status/multiparty: FireFly's NamespaceMultipartyStatus, the contract synced once the newest block is processed", async () => {
    expect(await multiparty()).to.deep.equal({
      enabled: true,
      org: { status: 'registered' },
      node: { status: 'registered' },
      contracts: { active: { index: 0, location: { address: CONTRACT }, firstEvent: '3', info: { version: 2 }, status: 'synced' } },
    })
  })

  it('an unregistered member, a chain behind, and a chain away', async () => {
    current = status({ orgRegistered: true, nodeRegistered: false, chain: { headBlock: 9, lastProcessedBlock: 4 } })
    expect(await multiparty()).to.deep.include({ org: { status: 'registered' }, node: { status: 'unregistered' } })
    expect((await multiparty()) as object).to.have.nested.property('contracts.active.status', 'syncing')
    current = status({ orgRegistered: false, nodeRegistered: false, chain: { connected: false } })
    expect((await multiparty()) as object).to.have.nested.property('contracts.active.status', 'unknown')
    expect((await multiparty()) as object).to.have.nested.property('org.status', 'unregistered')
  })
})
