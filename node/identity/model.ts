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
}

export type VerifierType = 'ethereum_address' | 'dx_peer_id'

export interface Verifier {
  identity: IdentityId
  type: VerifierType
  value: string
  created: Timestamp
}
