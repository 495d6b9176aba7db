import type { IdentityId, MessageId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'

export type IdentityType = 'org' | 'node'

/** A node's profile: how other members reach its p2p endpoint and recognise its certificate. */
export interface NodeProfile {
  id: string
  endpoint: string
  cert: string
}

export interface Identity {
  id: IdentityId
  did: string
  type: IdentityType
  parent?: IdentityId
  namespace: string
  name: string
  description?: string
  profile?: NodeProfile | Record<string, unknown>
  messages: { claim: MessageId }
  created: Timestamp
  updated?: Timestamp
  /**
   * The chain sequence (this member's) after which it counts as registered: the last pin of its claim's BatchPin
   * event. Absent: registered before sequences were recorded (or a fixture), so from the start. Not part of the API.
   */
  registeredAfter?: number
}

/** Whether `identity` was registered before chain sequence `seq` (a pin or message there may count on it). */
export function registeredBefore(identity: Identity, seq: number): boolean {
  return (identity.registeredAfter ?? 0) < seq
}

export type VerifierType = 'ethereum_address' | 'dx_peer_id'

export interface Verifier {
  identity: IdentityId
  type: VerifierType
  value: string
  created: Timestamp
}

/** Who this node is: the org it signs for and its own node identity. */
export interface LocalIdentity {
  org: string
  node: string
  orgDid: string
  nodeDid: string
  /** The org's signing address, lowercase. */
  key: string
}

export function orgDid(org: string): string {
  return `did:firefly:org/${org}`
}

/** The org name an org DID names (orgDid's inverse); a DID of another form is answered as it is. */
export function orgOfDid(did: string): string {
  const prefix = orgDid('')
  return did.startsWith(prefix) ? did.slice(prefix.length) : did
}

export function nodeDid(node: string): string {
  return `did:firefly:node/${node}`
}

export function localIdentity(org: string, node: string, key: string): LocalIdentity {
  return { org, node, orgDid: orgDid(org), nodeDid: nodeDid(node), key: key.toLowerCase() }
}

/** A node profile, when `profile` has the shape of one. */
export function nodeProfileOf(i: Identity): NodeProfile | undefined {
  const p = i.profile as Partial<NodeProfile> | undefined
  return p && typeof p.id === 'string' && typeof p.endpoint === 'string' && typeof p.cert === 'string' ? { id: p.id, endpoint: p.endpoint, cert: p.cert } : undefined
}
