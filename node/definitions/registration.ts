import { newId, type IdentityId } from '../core/ids.js'
import { identityTopic } from '../core/hashes.js'
import { Backoff } from '../core/backoff.js'
import { errorMessage } from '../core/errors.js'
import type { Database } from '../db/database.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import type { NodeStateRepo } from '../db/repos/node-state.js'
import type { MessageSender } from '../messaging/sender.js'
import { claimValue } from './identity-claim.js'
import { SYSTEM_NAMESPACE, TAG_IDENTITY_CLAIM, type LocalIdentity, type NodeProfile } from '../model/index.js'

const RETRY_MIN_MS = 1000
const RETRY_MAX_MS = 30_000

export interface RegistrationDeps {
  db: Database
  identities: IdentitiesRepo
  state: NodeStateRepo
  sender: MessageSender
  self: LocalIdentity
  profile: NodeProfile
  log: (line: string) => void
  /** Ends the retries (the node is stopping); the step in flight finishes first. */
  signal: AbortSignal
}

/**
 * Registers this member through the chain, as FireFly does: a claim for its org (signed with the org key), then a
 * claim for its node (carrying its p2p endpoint and certificate), both broadcast definitions. Each is sent once:
 * the ids chosen are stored, so a restart neither re-sends a claim in flight nor one already confirmed.
 *
 * Each step that fails (a full disk refusing the write, say) is tried again until it succeeds or the node stops,
 * one log line per distinct problem; only that step, so a claim that was sent is not sent again because recording
 * it failed. Never rejects.
 */
export async function registerSelf(deps: RegistrationDeps): Promise<void> {
  const { identities, state, sender, self, db, signal } = deps
  const step = persistently(deps)
  const record = async (key: string, value: string): Promise<void> => {
    await step(() => db.transaction((tx) => state.set(tx, key, value)))
  }
  const orgId = (identities.byDid(self.orgDid)?.id ?? state.get('identity.org.id') ?? newId<IdentityId>()) as IdentityId
  if (!identities.byDid(self.orgDid) && !state.get('identity.org.claimed')) {
    await record('identity.org.id', orgId)
    if (signal.aborted) return
    const msg = await step(() => sender.definition(SYSTEM_NAMESPACE, TAG_IDENTITY_CLAIM, [identityTopic(self.orgDid)], claimValue({ id: orgId, did: self.orgDid, type: 'org', name: self.org })))
    if (!msg) return
    // Logged even while stopping: the claim went out.
    deps.log(`identity: claimed ${self.orgDid} (message ${msg.header.id})`)
    await record('identity.org.claimed', msg.header.id)
    if (signal.aborted) return
  }
  if (!identities.byDid(self.nodeDid) && !state.get('identity.node.claimed')) {
    const nodeId = (state.get('identity.node.id') ?? newId<IdentityId>()) as IdentityId
    await record('identity.node.id', nodeId)
    if (signal.aborted) return
    const msg = await step(() =>
      sender.definition(
        SYSTEM_NAMESPACE,
        TAG_IDENTITY_CLAIM,
        [identityTopic(self.nodeDid)],
        claimValue({ id: nodeId, did: self.nodeDid, type: 'node', parent: orgId, name: self.node, profile: deps.profile }),
      ),
    )
    if (!msg) return
    // Logged even while stopping: the claim went out.
    deps.log(`identity: claimed ${self.nodeDid} (message ${msg.header.id})`)
    await record('identity.node.claimed', msg.header.id)
    if (signal.aborted) return
  }
}

/**
 * Runs a step until it succeeds: its result, or undefined once the signal aborts (which the caller checks when the
 * step has no result). A step is tried at least once, though the signal aborted already: a claim sent as the node
 * began to stop is still recorded as sent, so that the next start does not send it again. Between tries it waits
 * until the database takes writes again while the disk is full, and a backoff otherwise.
 */
function persistently(deps: RegistrationDeps) {
  const backoff = new Backoff(RETRY_MIN_MS, RETRY_MAX_MS)
  return async <T>(run: () => Promise<T>): Promise<T | undefined> => {
    for (let first = true; first || !deps.signal.aborted; first = false) {
      try {
        const result = await run()
        if (backoff.retrying) deps.log('identity: registration goes on after retrying')
        backoff.reset()
        return result
      } catch (err) {
        if (deps.signal.aborted) return undefined
        const problem = errorMessage(err)
        if (backoff.failed(problem)) deps.log(`identity: registration failed, retrying: ${problem}`)
        await deps.db.beforeRetry(backoff, deps.signal)
      }
    }
    return undefined
  }
}
