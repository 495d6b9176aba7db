import { errorMessage } from '../core/errors.js'
import type { Peer } from '../exchange/index.js'
import { nodeProfileOf, type Identity, type IdentityType } from '../model/index.js'

/** The reads of the identities repository the peer list needs. */
export interface RegisteredIdentities {
  all(type: IdentityType): Identity[]
}

/**
 * Every node registered through the chain, as a peer of the exchange: the p2p endpoint and certificate its own claim
 * published, and the org that owns it. This is how a member finds the others wherever they run: nothing but the
 * chain tells it where they are. A node whose claim carries no endpoint and certificate, or whose org is unknown
 * here, is no peer: there is no way to reach it, or to know whom a connection from it speaks for.
 */
export function registeredPeers(identities: RegisteredIdentities): Peer[] {
  // Two reads, not one per node.
  const orgs = new Map(identities.all('org').map((o) => [o.id as string, o]))
  return identities.all('node').flatMap((n) => {
    const profile = nodeProfileOf(n)
    const org = n.parent ? orgs.get(n.parent) : undefined
    return profile && org ? [{ node: n.did, org: org.name, endpoint: profile.endpoint, cert: profile.cert }] : []
  })
}

/**
 * The registered peers by node DID, read again only when a node was confirmed since the last read (`markStale`) and a
 * peer is next looked up or connects: each member of a 20-member network confirms 20 nodes as it starts, while nothing
 * uses the list. `trust` hands each new list to the exchange. A read that fails (the database away) keeps the last
 * list and is tried again at the next use: a lookup never throws, so a caller's retry is always scheduled. One log
 * line per outage, not one per lookup.
 */
export class LazyPeers {
  private byNode = new Map<string, Peer>()
  private stale = true
  private failing = false

  constructor(
    private readonly read: () => Peer[],
    private readonly trust: (peers: Peer[]) => void,
    private readonly log: (line: string) => void,
  ) {}

  markStale(): void {
    this.stale = true
  }

  current(): ReadonlyMap<string, Peer> {
    if (!this.stale) return this.byNode
    let list: Peer[]
    try {
      list = this.read()
    } catch (err) {
      if (!this.failing) this.log(`p2p: the peers could not be read again, the last list serves until they can: ${errorMessage(err)}`)
      this.failing = true
      return this.byNode
    }
    this.failing = false
    this.byNode = new Map(list.map((p) => [p.node, p]))
    this.stale = false
    this.trust(list)
    return this.byNode
  }
}
