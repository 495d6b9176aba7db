import { expect } from 'chai'
import { registeredPeers } from '../../../../node/identity/peers.js'
import type { Identity, IdentityType } from '../../../../node/model/index.js'

describe('node/identity/peers: the other members found from what the chain registered', () => {
  const identity = (i: { id: string; did: string; type: IdentityType; name: string; parent?: string; profile?: Record<string, unknown> }): Identity =>
    ({ namespace: 'svc_system', messages: { claim: 'claim' }, created: '2026-01-01T00:00:00Z', ...i }) as unknown as Identity
  const org = identity({ id: 'o1', did: 'did:firefly:org/org1', type: 'org', name: 'org1' })
  const profile = { id: 'org1/node1', endpoint: 'https://127.0.0.3:3001', cert: '-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n' }
  const repo = (nodes: Identity[]) => ({
    all: (type: IdentityType) => (type === 'node' ? nodes : [org]),
    byId: (id: string) => [org, ...nodes].find((i) => i.id === id),
  })

  it("a registered node is a peer at the endpoint and with the certificate of its own claim, under its org's name", () => {
    const node = identity({ id: 'n1', did: 'did:firefly:node/node1', type: 'node', name: 'node1', parent: 'o1', profile })
    expect(registeredPeers(repo([node]))).to.deep.equal([{ node: 'did:firefly:node/node1', org: 'org1', endpoint: profile.endpoint, cert: profile.cert }])
  })

  it('a node whose claim has no endpoint or certificate, or whose org is unknown, is no peer', () => {
    const bare = identity({ id: 'n2', did: 'did:firefly:node/node2', type: 'node', name: 'node2', parent: 'o1' })
    const halfProfile = identity({ id: 'n3', did: 'did:firefly:node/node3', type: 'node', name: 'node3', parent: 'o1', profile: { id: 'x', endpoint: 'https://h:1' } })
    const orphan = identity({ id: 'n4', did: 'did:firefly:node/node4', type: 'node', name: 'node4', parent: 'nobody', profile })
    const parentless = identity({ id: 'n5', did: 'did:firefly:node/node5', type: 'node', name: 'node5', profile })
    expect(registeredPeers(repo([bare, halfProfile, orphan, parentless]))).to.deep.equal([])
  })
})
