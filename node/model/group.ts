import type { Hash, IdentityId, MessageId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'

/**
 * The tag of a groupinit message, FireFly's `ff_define_group` written with the service's neutral system prefix, as
 * this service writes its other system tags (identity claims, datatype definitions).
 */
export const TAG_DEFINE_GROUP = 'svc_define_group'

/** One member of a group: an org, by DID, and the node (its identity id) that receives for it. */
export interface GroupMember {
  identity: string
  node: IdentityId
}

/**
 * A private group, FireFly's `core.Group`. Its hash is the group's id: sha256 of `{namespace, name, members}` with
 * the members sorted (core/hashes `groupHash`), so every member derives the same one from the member list alone.
 * A member stores only groups it is in.
 */
export interface Group {
  hash: Hash
  /** The network namespace, which the hash covers. */
  namespace: string
  /** May be empty. */
  name: string
  /** Sorted as the hash covers them. */
  members: GroupMember[]
  created: Timestamp
  /** The groupinit message that announced the group, once known here. */
  message?: MessageId
}

/** A group as a private send names it: members by org name or DID, each with an optional node. */
export interface GroupInput {
  name?: string
  members: readonly { identity: string; node?: string }[]
}
