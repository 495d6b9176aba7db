import { ParleyError } from '../core/errors.js'
import { dataHash, dataRefsHash, groupHash, messageHash, sortGroupMembers } from '../core/hashes.js'
import { isUuid, newId, parseHash, type DataId, type Hash, type IdentityId, type MessageId } from '../core/ids.js'
import { goJson, goStruct } from '../core/json.js'
import { NAME_RE } from '../core/names.js'
import { now, type Timestamp } from '../core/time.js'
import type { Tx } from '../db/database.js'
import type { GroupsRepo } from '../db/repos/groups.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import { ancestry, nodeOwnershipProblem } from './ownership.js'
import {
  nodeDid,
  nodeProfileOf,
  orgDid,
  orgOfDid,
  TAG_DEFINE_GROUP,
  type Data,
  type DataRef,
  type Group,
  type GroupInput,
  type GroupMember,
  type Header,
  type Identity,
  type LocalIdentity,
  type Message,
} from '../model/index.js'

/** A group as a send resolved it: sealed (members sorted, hash), and whether this member has it stored yet. */
export interface ResolvedGroup {
  group: Group
  /**
   * No group with its hash is stored here: the send that stores it (GroupsRepo.insert, in the send's transaction,
   * answering true) also sends its groupinit. Two sends resolving the same new group at once both see `true` here;
   * the insert decides which one creates it.
   */
  isNew: boolean
}

const bad = (msg: string): never => {
  throw new ParleyError('INVALID_FIELD', msg)
}

/** A caller's string as an error shows it: quoted, and cut when long. */
const quote = (s: string): string => JSON.stringify(s.length > 100 ? `${s.slice(0, 100)}…` : s)

/**
 * The sealed form of a member list, as FireFly's `Group.Seal`: members sorted by identity, and the hash of
 * `{namespace, name, members}` (core/hashes `groupHash`).
 */
export function sealGroup(namespace: string, name: string, members: readonly GroupMember[]): { hash: Hash; members: GroupMember[] } {
  const sorted = sortGroupMembers(members)
  return { hash: groupHash({ namespace, name, members: sorted }), members: sorted }
}

/**
 * Resolves the group of a private send to a sealed group, as FireFly's `privatemessaging/recipients.go` does:
 *
 * - A group hash names a group this member already has (a member stores only groups it is in).
 * - Otherwise each member's `identity` is an org name, an org DID `did:firefly:org/<name>` (or FireFly's alias
 *   `did:firefly:org/<identity id>`), or the DID of another registered identity, which must not be a node (FireFly's
 *   `identitymanager.go cachedIdentityLookup`). Its `node` is a node name, a node DID or a node identity id, which
 *   the identity or one of its ancestors must own (FireFly's `groupInit` -> `ValidateNodeOwner`); without one, the
 *   first registered node whose parent is the identity, or else an ancestor of it (`resolveNode`).
 * - This member's own org and node are added unless a member is already that org on this node (`getRecipients`), so
 *   the author is always in the group, on the node that sends.
 * - Refused (INVALID_FIELD, naming the member): an unknown identity or node, an org with no registered node, a node
 *   another org owns, the same member twice (FireFly's `Group.Validate`), a name that is not a FireFly name or is a
 *   UUID, no members, and a group of only the author.
 *
 * Nothing is stored here: see ResolvedGroup.isNew.
 */
export class GroupResolver {
  private selfIds: { org: Identity; node: Identity } | undefined
  /**
   * Each org's first node once found: a node registered later comes later in the confirmation order, so the answer
   * never changes, and a send names each member's org without reading it again.
   */
  private readonly firstNodes = new Map<IdentityId, Identity>()

  constructor(private readonly deps: { identities: IdentitiesRepo; groups: GroupsRepo; self: LocalIdentity }) {}

  resolve(namespace: string, input: GroupInput | string, tx?: Tx): ResolvedGroup {
    const self = this.selfIdentities(tx)
    if (typeof input === 'string') return { group: this.byHash(namespace, input, self, tx), isNew: false }

    const name = input.name ?? ''
    if (name !== '' && (!NAME_RE.test(name) || isUuid(name))) {
      bad(`group.name must be 1-64 letters, digits, '.', '_' or '-', starting and ending alphanumeric, and not a UUID: ${quote(name)}`)
    }
    if (input.members.length === 0) bad('group.members must hold at least one member')

    const members: GroupMember[] = []
    const seen = new Map<string, number>()
    input.members.forEach((m, i) => {
      const where = `group.members[${i}]`
      const identity = this.memberIdentity(m.identity, where, tx)
      const node = m.node !== undefined ? this.explicitNode(identity, m.node, where, tx) : this.defaultNode(identity, where, tx)
      // A node that cannot be reached would hold every delivery to it forever: refused while the group is formed.
      const profile = nodeProfileOf(node)
      if (!profile || !profile.endpoint.startsWith('https://') || !profile.cert.includes('BEGIN CERTIFICATE')) {
        bad(`${where}: node ${node.did} registered no https p2p endpoint and certificate, so private messages cannot reach it`)
      }
      const key = `${identity.did}\u0000${node.id}`
      const earlier = seen.get(key)
      if (earlier !== undefined) bad(`${where} is the same member as group.members[${earlier}]: ${identity.did} on node ${node.did}`)
      seen.set(key, i)
      members.push({ identity: identity.did, node: node.id })
    })
    // Receivers check that the author's (org DID, node) is a member (FireFly's `groupContains`), so that exact pair is
    // what must be there; FireFly's sender looks only for its node, which a custom identity on it would satisfy.
    if (!members.some((m) => m.identity === self.org.did && m.node === self.node.id)) members.push({ identity: self.org.did, node: self.node.id })
    // The author is always in now, and no member twice: one member is the author alone.
    if (members.length === 1) bad(`the group holds only the sender (${self.org.did} on ${self.node.did}); name at least one other member`)

    const sealed = sealGroup(namespace, name, members)
    const existing = this.deps.groups.byHash(sealed.hash, tx)
    if (existing) return { group: existing, isNew: false }
    return { group: { hash: sealed.hash, namespace, name, members: sealed.members, created: now() }, isNew: true }
  }

  /** This node's org and node identities; until both are confirmed it cannot be in any group. */
  private selfIdentities(tx?: Tx): { org: Identity; node: Identity } {
    if (this.selfIds) return this.selfIds
    const { identities, self } = this.deps
    const org = identities.byDid(self.orgDid, tx)
    const node = identities.byDid(self.nodeDid, tx)
    if (!org || !node) {
      throw new ParleyError('UNAVAILABLE', `this node's ${!org ? `org ${self.orgDid}` : `node ${self.nodeDid}`} is not registered yet (its claim is not confirmed); try again shortly`)
    }
    if (node.parent !== org.id) throw new ParleyError('UNAVAILABLE', `${self.nodeDid} is registered, but not as a node of ${self.orgDid}: this node cannot be in a group for it`)
    // A confirmed identity stays confirmed: once both are seen, no send needs to read them again.
    this.selfIds = { org, node }
    return this.selfIds
  }

  private byHash(namespace: string, text: string, self: { org: Identity; node: Identity }, tx?: Tx): Group {
    const hash = parseHash(text, 'group')
    const group = this.deps.groups.byHash(hash, tx)
    if (!group || group.namespace !== namespace) {
      bad(`no group ${hash} in namespace ${namespace} on this node (a member knows only the groups it is in); name the group's members instead`)
    }
    if (!group!.members.some((m) => m.identity === self.org.did && m.node === self.node.id)) {
      bad(`this node (${self.org.did} on ${self.node.did}) is not a member of group ${hash}`)
    }
    return group!
  }

  private memberIdentity(text: string, where: string, tx?: Tx): Identity {
    const { identities } = this.deps
    let found: Identity | undefined
    if (text.startsWith('did:')) {
      if (!text.startsWith('did:firefly:')) bad(`${where}.identity: ${quote(text)} is not a FireFly DID (did:firefly:...), the only method resolved here`)
      found = identities.byDid(text, tx)
      // FireFly's alias: an org's identity id in place of its name.
      const alias = orgOfDid(text)
      if (!found && alias !== text && isUuid(alias)) found = identities.byId(alias.toLowerCase(), tx)
    } else if (NAME_RE.test(text)) {
      found = identities.byDid(orgDid(text), tx)
    }
    if (!found) bad(`${where}.identity: no registered org ${quote(text)}; give an org name, did:firefly:org/<name> or the DID of a registered identity`)
    if (found!.type === 'node') bad(`${where}.identity: ${found!.did} is a node; the identity is the org, and its node goes in ${where}.node`)
    return found!
  }

  private explicitNode(identity: Identity, text: string, where: string, tx?: Tx): Identity {
    const { identities } = this.deps
    const node = isUuid(text) ? identities.byId(text.toLowerCase(), tx) : text.startsWith('did:') ? identities.byDid(text, tx) : NAME_RE.test(text) ? identities.byDid(nodeDid(text), tx) : undefined
    if (!node || node.type !== 'node') bad(`${where}.node: no registered node ${quote(text)}; give a node name, did:firefly:node/<name> or a node's identity id`)
    const problem = nodeOwnershipProblem(identities, identity, node!, tx)
    if (problem) bad(`${where}.node: ${problem}`)
    return node!
  }

  /** The first registered node whose parent is the identity, else the nearest ancestor that has one. */
  private defaultNode(identity: Identity, where: string, tx?: Tx): Identity {
    for (const owner of ancestry(this.deps.identities, identity, tx)) {
      const node = this.firstNodeOf(owner.id, tx)
      if (node) return node
    }
    return bad(`${where}: ${identity.did} has no registered node to receive for it (a member's node registers after its org)`)
  }

  private firstNodeOf(parent: IdentityId, tx?: Tx): Identity | undefined {
    const known = this.firstNodes.get(parent)
    if (known) return known
    const node = this.deps.identities.firstNodeOf(parent, tx)
    if (node) this.firstNodes.set(parent, node)
    return node
  }
}

/** A groupinit: the message that carries a new group to its members, and its one data item. */
export interface Groupinit {
  message: Message
  data: Data
}

/**
 * The value a groupinit carries: FireFly's `json.Marshal(&group)` as `groupInit` writes it, the hashed fields
 * (`namespace`, `name`, `members`, sorted) then `hash` and `created`. A FireFly member reads it back into a Group and
 * checks the hash against the members (`Group.Validate(existing=true)`), so `hash` must be there.
 */
export function groupinitValue(group: Group): string {
  return goJson(
    goStruct(
      ['namespace', group.namespace || undefined],
      ['name', group.name],
      ['members', group.members.map((m) => goStruct(['identity', m.identity], ['node', m.node]))],
      ['hash', group.hash],
      ['created', group.created],
    ),
  )
}

/**
 * Builds, without storing or sending it, the groupinit of a new group as FireFly's `groupmanager.go groupInit`
 * does: one data item holding the group, and a message `{type: groupinit, tag, topics: [hash], group: hash,
 * txtype: batch_pin}` signed by this member, sealed like every message the sender seals (data hash, datahash,
 * header hash). Its data's validator is `json` with no datatype, as the service's other definitions carry: the
 * data hash covers the value's bytes only (FireFly's `Data.CalcHash`), so every member computes the same one from
 * the batch, and no member's receipt checks refuse it (FireFly's own `definition` is not a validator here).
 */
export function groupinitFor(group: Group, author: LocalIdentity, created: Timestamp = now()): Groupinit {
  const valueRaw = groupinitValue(group)
  const data: Data = {
    id: newId<DataId>(),
    validator: 'json',
    namespace: group.namespace,
    hash: dataHash({ valueRaw }),
    created,
    value: valueRaw,
  }
  const refs: DataRef[] = [{ id: data.id, hash: data.hash }]
  const header: Header = {
    id: newId<MessageId>(),
    type: 'groupinit',
    txtype: 'batch_pin',
    author: author.orgDid,
    key: author.key,
    created,
    namespace: group.namespace,
    group: group.hash,
    topics: [group.hash],
    tag: TAG_DEFINE_GROUP,
    datahash: dataRefsHash(refs),
  }
  return { message: { header, hash: messageHash(header), state: 'ready', data: refs }, data }
}
