import { expect } from 'chai'
import { LazyPeers, registeredPeers } from '../../../../node/identity/peers.js'
import type { Peer } from '../../../../node/exchange/index.js'
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

  describe('LazyPeers: read again only when used after a node was confirmed', () => {
    const peer = (n: number): Peer => ({ node: `did:firefly:node/n${n}`, org: `org${n}`, endpoint: `https://127.0.0.1:${3000 + n}`, cert: 'pem' })

    it('reads once until marked stale, and hands each new list to the exchange', () => {
      let list = [peer(1)]
      let reads = 0
      const trusted: Peer[][] = []
      const peers = new LazyPeers(() => (reads++, list), (l) => trusted.push(l), () => {})
      expect(reads, 'nothing read before a use').to.equal(0)
      expect(peers.current().get('did:firefly:node/n1')?.org).to.equal('org1')
      peers.current()
      expect(reads).to.equal(1)
      list = [peer(1), peer(2)]
      peers.markStale()
      peers.markStale()
      expect(reads, 'marking reads nothing').to.equal(1)
      expect(peers.current().size).to.equal(2)
      expect(reads).to.equal(2)
      expect(trusted).to.deep.equal([[peer(1)], [peer(1), peer(2)]])
    })

    it('keeps the last list when a read fails (the database away), logs once, and reads again at the next use', () => {
      let down = false
      let list = [peer(1)]
      const lines: string[] = []
      const peers = new LazyPeers(
        () => {
          if (down) throw new Error('the database is unavailable')
          return list
        },
        () => {},
        (l) => lines.push(l),
      )
      peers.current()
      down = true
      list = [peer(1), peer(2)]
      peers.markStale()
      expect(() => peers.current(), 'a lookup never throws').not.to.throw()
      expect([...peers.current().keys()]).to.deep.equal(['did:firefly:node/n1'])
      expect(lines).to.have.length(1)
      expect(lines[0]).to.contain('the database is unavailable')
      down = false
      expect(peers.current().size, 'read again once it is back').to.equal(2)
      peers.current()
      expect(lines).to.have.length(1)
    })
  })
})
