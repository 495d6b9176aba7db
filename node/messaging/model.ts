import type { BatchId, DataId, Hash, MessageId, TxId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'

export type MessageType = 'broadcast' | 'private' | 'definition' | 'groupinit'
export type TxType = 'batch_pin' | 'none'
/**
 * `ready`: accepted by this node and waiting for its batch's pin; `pending`: received from another member and not yet
 * confirmed; `confirmed`; `rejected`: ordered but refused (e.g. a datatype conflict or failed validation).
 */
export type MessageState = 'ready' | 'pending' | 'confirmed' | 'rejected'

/** The hashed header: exactly these fields, in FireFly's Go struct order (see core/hashes). */
export interface Header {
  id: MessageId
  cid?: MessageId
  type: MessageType
  txtype: TxType
  author: string
  key: string
  created: Timestamp
  namespace: string
  group?: Hash
  topics: string[]
  tag?: string
  datahash: Hash
}

export interface DataRef {
  id: DataId
  hash: Hash
}

export interface Message {
  header: Header
  hash: Hash
  batch?: BatchId
  txid?: TxId
  state: MessageState
  confirmed?: Timestamp
  rejectReason?: string
  data: DataRef[]
  pins?: string[]
  idempotencyKey?: string
}

export interface BlobRef {
  hash: Hash
  size: number
  name: string
  /** The shared-storage reference, once published. */
  public?: string
}

export interface DatatypeRef {
  name: string
  version: string
}

/** A data item. `value` is the compacted JSON text as received (hashes cover exactly these bytes), or null. */
export interface Data {
  id: DataId
  validator: string
  namespace: string
  hash: Hash
  created: Timestamp
  datatype?: DatatypeRef
  value: string | null
  blob?: BlobRef
}

/** Namespaces of the service's own system traffic (definitions), written with the spec's neutral prefix. */
export const SYSTEM_NAMESPACE = 'svc_system'
export const TAG_IDENTITY_CLAIM = 'svc_identity_claim'
export const TAG_DEFINE_DATATYPE = 'svc_define_datatype'

/** The topic datatype definitions for namespace `ns` are ordered on (in the system namespace). */
export function datatypeDefinitionTopic(ns: string): string {
  return `svc_ns_${ns}`
}

export function orgDid(org: string): string {
  return `did:firefly:org/${org}`
}
export function nodeDid(node: string): string {
  return `did:firefly:node/${node}`
}
