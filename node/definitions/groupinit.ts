import type { Tx } from '../db/database.js'
import type { GroupsRepo } from '../db/repos/groups.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import { parseGroupinit } from '../identity/groupinit.js'
import { ancestry, nodeOwnershipProblem } from '../identity/ownership.js'
import { registeredBefore, TAG_DEFINE_GROUP, type Data, type Group, type Message } from '../model/index.js'
import type { DefinitionHandler, DefinitionOutcome } from './types.js'

export interface GroupinitDeps {
  groups: GroupsRepo
  identities: IdentitiesRepo
  /** Whether a claim for `did` was pinned before `seq` and is not applied yet (identity/pending.ts). */
  claimPending: (tx: Tx, did: string, seq: number) => boolean
  /** Whether `key` signed a pin before `seq` that still waits. */
  signerPending: (tx: Tx, key: string, seq: number) => boolean
}

/**
 * A groupinit, in its turn on chain (its masked pin already checked): the group it carries must hash to the
 * message's `header.group`, hold its author, and pair every org with a node of its own; then it is stored here
 * unless it is already (the sender stored it when it sent), and the groupinit recorded as its announcement.
 * FireFly's `ResolveInitGroup`, with the node ownership its sender checks (`ValidateNodeOwner`) checked by every
 * receiver too: a member that pinned a group pairing another org with its own node would receive that org's
 * private messages.
 */
export function groupinitHandler(deps: GroupinitDeps): DefinitionHandler {
  return {
    tag: TAG_DEFINE_GROUP,
    handle(tx: Tx, message: Message, data: Data[], _signer: string, pinSeq: number): DefinitionOutcome {
      if (message.header.type !== 'groupinit') return { kind: 'reject', reason: `a ${message.header.type} message cannot define a group` }
      if (data.length !== 1) return { kind: 'reject', reason: `a groupinit carries one data item, not ${data.length}` }
      const parsed = parseGroupinit(data[0]!.value, message.header.group, message.header.namespace)
      if (!parsed.ok) return { kind: 'reject', reason: parsed.reason }
      const { group } = parsed
      if (!group.members.some((m) => m.identity === message.header.author)) return { kind: 'reject', reason: `its author ${message.header.author} is not a member of the group it defines` }
      const owners = membersProblem(deps, tx, group, pinSeq)
      if (owners) return owners
      deps.groups.insert(tx, { ...group, message: message.header.id })
      deps.groups.setMessage(tx, group.hash, message.header.id)
      return { kind: 'confirm', events: [] }
    },
  }
}

/**
 * Every member's identity registered and its node one of its own, as of the groupinit's place in the chain's order.
 * An identity or node not registered here yet is waited for only while its claim can still come before the
 * groupinit: an org's claim on its DID's topic, a node's claim signed by its org's key (or an ancestor's). Otherwise
 * the group is refused, alike on every member, whichever claims happened to arrive first.
 */
function membersProblem(deps: GroupinitDeps, tx: Tx, group: Group, pinSeq: number): DefinitionOutcome | undefined {
  const { identities } = deps
  for (const m of group.members) {
    const identity = identities.byDid(m.identity, tx)
    // Registered as of the groupinit's place in the chain's order, whichever claim payload came first here.
    if (identity && !registeredBefore(identity, pinSeq)) return { kind: 'reject', reason: `group member ${m.identity} was registered only after this group, in the chain's order` }
    if (!identity) {
      if (deps.claimPending(tx, m.identity, pinSeq)) return { kind: 'wait', wait: { reason: 'identity', author: m.identity, detail: `group member ${m.identity} is not confirmed yet` } }
      return { kind: 'reject', reason: `group member ${m.identity} is not a registered identity` }
    }
    if (identity.type === 'node') return { kind: 'reject', reason: `group member ${m.identity} is a node; a member is an org (or a custom identity) with its node` }
    const node = identities.byId(m.node, tx)
    if (!node) {
      const keys = ancestry(identities, identity, tx).flatMap((i) => identities.verifiersOf(i.id, tx).filter((v) => v.type === 'ethereum_address').map((v) => v.value))
      if (keys.some((k) => deps.signerPending(tx, k, pinSeq))) return { kind: 'wait', wait: { reason: 'identity', author: m.identity, detail: `node ${m.node} of group member ${m.identity} is not confirmed yet` } }
      return { kind: 'reject', reason: `group member ${m.identity}: node ${m.node} is not a registered node` }
    }
    if (!registeredBefore(node, pinSeq)) return { kind: 'reject', reason: `group member ${m.identity}: node ${node.did} was registered only after this group, in the chain's order` }
    const problem = nodeOwnershipProblem(identities, identity, node, tx)
    if (problem) return { kind: 'reject', reason: `group member ${m.identity}: ${problem}` }
  }
  return undefined
}
