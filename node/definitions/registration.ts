import { newId, type IdentityId } from '../core/ids.js'
import { identityTopic } from '../core/hashes.js'
import type { Database } from '../db/database.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import type { NodeStateRepo } from '../db/repos/node-state.js'
import type { MessageSender } from '../messaging/sender.js'
import { claimValue } from './identity-claim.js'
import { SYSTEM_NAMESPACE, TAG_IDENTITY_CLAIM, type LocalIdentity, type NodeProfile } from '../model/index.js'

/**
 * Registers this member through the chain, as FireFly does: a claim for its org (signed with the org key), then a
 * claim for its node (carrying its p2p endpoint and certificate), both broadcast definitions. Each is sent once:
 * the ids chosen are stored, so a restart neither re-sends a claim in flight nor one already confirmed.
 */
export async function registerSelf(deps: {
  db: Database
  identities: IdentitiesRepo
  state: NodeStateRepo
  sender: MessageSender
  self: LocalIdentity
  profile: NodeProfile
  log: (line: string) => void
}): Promise<void> {
  const { identities, state, sender, self, db } = deps
  const orgId = (identities.byDid(self.orgDid)?.id ?? state.get('identity.org.id') ?? newId<IdentityId>()) as IdentityId
  if (!identities.byDid(self.orgDid) && !state.get('identity.org.claimed')) {
    await db.transaction((tx) => state.set(tx, 'identity.org.id', orgId))
    const msg = await sender.definition(SYSTEM_NAMESPACE, TAG_IDENTITY_CLAIM, [identityTopic(self.orgDid)], claimValue({ id: orgId, did: self.orgDid, type: 'org', name: self.org }))
    await db.transaction((tx) => state.set(tx, 'identity.org.claimed', msg.header.id))
    deps.log(`identity: claimed ${self.orgDid} (message ${msg.header.id})`)
  }
  if (!identities.byDid(self.nodeDid) && !state.get('identity.node.claimed')) {
    const nodeId = (state.get('identity.node.id') ?? newId<IdentityId>()) as IdentityId
    await db.transaction((tx) => state.set(tx, 'identity.node.id', nodeId))
    const msg = await sender.definition(
      SYSTEM_NAMESPACE,
      TAG_IDENTITY_CLAIM,
      [identityTopic(self.nodeDid)],
      claimValue({ id: nodeId, did: self.nodeDid, type: 'node', parent: orgId, name: self.node, profile: deps.profile }),
    )
    await db.transaction((tx) => state.set(tx, 'identity.node.claimed', msg.header.id))
    deps.log(`identity: claimed ${self.nodeDid} (message ${msg.header.id})`)
  }
}
