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
  // Two reads, not one per node: the list is made again each time a node is confirmed, 19 times over in each member
  // of a 20-member network's start.
  const orgs = new Map(identities.all('org').map((o) => [o.id as string, o]))
  return identities.all('node').flatMap((n) => {
    const profile = nodeProfileOf(n)
    const org = n.parent ? orgs.get(n.parent) : undefined
    return profile && org ? [{ node: n.did, org: org.name, endpoint: profile.endpoint, cert: profile.cert }] : []
  })
}
