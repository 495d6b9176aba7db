import type { BatchId, Hash, MessageId, TxId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'
import type { DatatypeRef } from './data.js'
import type { MessageState } from './message.js'

/**
 * A message's trace on one member (GET .../messages/{id}/trace): what happened to it there, oldest first, and while
 * it is neither confirmed nor rejected, why it waits.
 */
export interface MessageTrace {
  message: MessageId
  /** This member's org and node names. */
  org: string
  node: string
  state: MessageState
  timeline: TraceStep[]
  waiting?: Waiting
}

export type TraceStepName = 'accepted' | 'sealed' | 'uploaded' | 'delivered' | 'pinned' | 'mined' | 'received' | 'blob_fetched' | 'confirmed' | 'rejected'

/** One step of a message's life on a member, with what identifies it (only the fields that apply). */
export interface TraceStep {
  at: Timestamp
  step: TraceStepName
  detail: string
  batch?: BatchId
  /** The shared-storage reference (IPFS CID) of a broadcast batch or blob. */
  cid?: string
  /** A peer node, by DID, and its org's name (private deliveries, and where a private batch came from). */
  peer?: string
  org?: string
  /** A delivery's state: `done`, `pending` (not acknowledged yet), `failed` (refused for good); `held`, `dropped` by a test control. */
  state?: string
  attempts?: number
  /** The batch's transaction id (FireFly's), and the chain transaction that pinned it. */
  tx?: TxId
  chainTx?: string
  block?: number
  logIndex?: number
  blob?: Hash
  reason?: string
}

export type WaitingReason = 'pin' | 'batch' | 'blob' | 'datatype' | 'identity' | 'blocked' | 'delivery'

/** The message a waiting one is behind, as far as this member knows it. */
export interface Blocker {
  /** Absent while this member does not hold it (a private batch not delivered here, a broadcast not downloaded yet). */
  message?: MessageId
  author: string
  /** A private message's nonce on the topic (in its group). */
  nonce?: number
  topic: string
  /** Its batch, where its pin was read here or its batch is here. */
  batch?: BatchId
}

/** Why a message is not decided on this member yet, in words (`detail`) and fields. */
export interface Waiting {
  reason: WaitingReason
  detail: string
  topic?: string
  /** Where a missing batch payload comes from: shared storage (`cid`) or a peer node (`peer`, `org`). */
  cid?: string
  peer?: string
  org?: string
  blob?: Hash
  datatype?: DatatypeRef
  author?: string
  blockedBy?: Blocker
  /** The sender's side of a pin: whether its batch is sealed and its pin transaction sent (`chainTx` once known). */
  sealed?: boolean
  sent?: boolean
  chainTx?: string
  /** When the aggregator last found the message waiting for this (reasons it decided). */
  since?: Timestamp
}
