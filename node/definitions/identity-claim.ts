import { compactJson, parseJsonRaw, type JsonNode } from '../core/json.js'
import { isUuid, type IdentityId } from '../core/ids.js'
import { now } from '../core/time.js'
import type { Tx } from '../db/database.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import type { DefinitionHandler, DefinitionOutcome } from './types.js'
import { NAME_RE } from '../core/names.js'
import { nodeDid, orgDid, registeredBefore, SYSTEM_NAMESPACE, TAG_IDENTITY_CLAIM, type Data, type Message, type Identity, type NodeProfile } from '../model/index.js'


/** The value of an identity claim: `{"identity": {id, did, type, parent?, namespace, name, description?, profile?}}`. */
export function claimValue(i: { id: IdentityId; did: string; type: 'org' | 'node'; parent?: IdentityId; name: string; profile?: NodeProfile }): string {
  return compactJson(JSON.stringify({
    identity: {
      id: i.id,
      did: i.did,
      type: i.type,
      ...(i.parent ? { parent: i.parent } : {}),
      namespace: SYSTEM_NAMESPACE,
      name: i.name,
      ...(i.profile ? { profile: i.profile } : {}),
    },
  }))
}

/**
 * Confirms identity claims in chain order. An org claims itself, signed with the key that becomes its verifier;
 * a node is claimed by its parent org, signed with the org's key, and its profile (p2p endpoint + certificate)
 * becomes how other members reach and recognise it. A DID or key claimed before wins; a later claim is rejected.
 * The identity is registered from the end of its claim's BatchPin event on (`registeredAfter`): what its key signed
 * earlier in the chain's order does not count as a member's, on any member, whichever claim payload came first.
 */
export function identityClaimHandler(
  identities: IdentitiesRepo,
  onNodeConfirmed: (node: Identity) => void,
  /** The last chain sequence of the BatchPin event of the pin at `seq`: the identity is registered after it. */
  eventEnd: (tx: Tx, seq: number) => number,
): DefinitionHandler {
  return {
    tag: TAG_IDENTITY_CLAIM,
    handle(tx: Tx, message: Message, data: Data[], signer: string, pinSeq: number): DefinitionOutcome {
      if (data.length !== 1 || data[0]!.value === null) return { kind: 'reject', reason: 'an identity claim carries exactly one data value' }
      let root: JsonNode
      try {
        root = parseJsonRaw(data[0]!.value!)
      } catch {
        return { kind: 'reject', reason: 'the identity claim is not JSON' }
      }
      const claim = root.kind === 'object' ? root.get('identity') : undefined
      if (!claim || claim.kind !== 'object') return { kind: 'reject', reason: 'the identity claim has no identity object' }
      const field = (k: string): string | undefined => {
        const v = claim!.get(k)
        return v && v.kind === 'string' ? v.value : undefined
      }
      const id = field('id')
      const did = field('did') ?? ''
      const type = field('type')
      const name = field('name') ?? ''
      if (!id || !isUuid(id)) return { kind: 'reject', reason: 'the identity claim has no valid id' }
      if (identities.byDid(did, tx)) return { kind: 'reject', reason: `${did} is already registered` }
      if (identities.byId(id, tx)) return { kind: 'reject', reason: `identity id ${id} is already registered` }
      const at = now()

      if (type === 'org') {
        if (!NAME_RE.test(name) || did !== orgDid(name)) return { kind: 'reject', reason: `org claim: ${did} is not did:firefly:org/${name}` }
        if (message.header.author !== did) return { kind: 'reject', reason: `org claim for ${did} is authored by ${message.header.author}` }
        const taken = identities.byVerifier('ethereum_address', signer, tx)
        if (taken) return { kind: 'reject', reason: `key ${signer} is already registered to ${taken.did}` }
        const identity: Identity = { id: id as IdentityId, did, type: 'org', namespace: SYSTEM_NAMESPACE, name, messages: { claim: message.header.id }, created: at, registeredAfter: eventEnd(tx, pinSeq) }
        identities.insert(tx, identity)
        identities.insertVerifier(tx, { identity: identity.id, type: 'ethereum_address', value: signer, created: at })
        return { kind: 'confirm', events: [{ type: 'identity_confirmed', namespace: SYSTEM_NAMESPACE, reference: identity.id, topic: message.header.topics[0]! }] }
      }

      if (type === 'node') {
        if (!NAME_RE.test(name) || did !== nodeDid(name)) return { kind: 'reject', reason: `node claim: ${did} is not did:firefly:node/${name}` }
        const parentId = field('parent')
        const parent = parentId ? identities.byId(parentId, tx) : undefined
        if (!parent) return { kind: 'wait', wait: { reason: 'identity', author: message.header.author, detail: `parent ${parentId ?? '(none)'} of ${did} is not confirmed yet` } }
        if (parent.type !== 'org') return { kind: 'reject', reason: `parent of node ${did} is not an org` }
        if (message.header.author !== parent.did) return { kind: 'reject', reason: `node claim for ${did} is authored by ${message.header.author}, not its parent ${parent.did}` }
        const parentKey = identities.byVerifier('ethereum_address', signer, tx)
        if (parentKey?.id !== parent.id) return { kind: 'reject', reason: `node claim for ${did} is signed by ${signer}, not by its parent's key` }
        if (!registeredBefore(parent, pinSeq)) return { kind: 'reject', reason: `node claim for ${did} comes before its parent ${parent.did}'s claim in the chain's order` }
        const profile = readProfile(claim.get('profile'))
        if (!profile) return { kind: 'reject', reason: `node claim for ${did} has no profile {id, endpoint, cert}` }
        if (identities.byVerifier('dx_peer_id', profile.id, tx)) return { kind: 'reject', reason: `peer id ${profile.id} is already registered` }
        const identity: Identity = { id: id as IdentityId, did, type: 'node', parent: parent.id, namespace: SYSTEM_NAMESPACE, name, profile, messages: { claim: message.header.id }, created: at, registeredAfter: eventEnd(tx, pinSeq) }
        identities.insert(tx, identity)
        identities.insertVerifier(tx, { identity: identity.id, type: 'dx_peer_id', value: profile.id, created: at })
        return {
          kind: 'confirm',
          events: [{ type: 'identity_confirmed', namespace: SYSTEM_NAMESPACE, reference: identity.id, topic: message.header.topics[0]! }],
          afterCommit: () => onNodeConfirmed(identity),
        }
      }
      return { kind: 'reject', reason: `identity type ${type ?? '(none)'} is not org or node` }
    },
  }
}

function readProfile(n: JsonNode | undefined): NodeProfile | undefined {
  if (!n || n.kind !== 'object') return undefined
  const s = (k: string) => {
    const v = n.get(k)
    return v && v.kind === 'string' && v.value.length > 0 ? v.value : undefined
  }
  const id = s('id')
  const endpoint = s('endpoint')
  const cert = s('cert')
  return id && endpoint && cert ? { id, endpoint, cert } : undefined
}

