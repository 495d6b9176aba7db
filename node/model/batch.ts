import type { BatchId, Hash, TxId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'
import { MAX_DATA_PER_MESSAGE, type Data } from './data.js'
import { MAX_TOPICS_PER_MESSAGE, type DataRef, type Header } from './message.js'

export type BatchType = 'broadcast' | 'private'

/** The batch a message travels in: private and groupinit messages peer to peer, the rest through shared storage. */
export function batchTypeOf(m: { header: { type: string } }): BatchType {
  return m.header.type === 'private' || m.header.type === 'groupinit' ? 'private' : 'broadcast'
}

/**
 * The largest batch payload a member reads (from shared storage or a peer). Every member refuses a larger one, so no
 * member may accept a message that could only travel in a larger one (see MAX_MESSAGE_BYTES).
 */
export const MAX_BATCH_PAYLOAD_BYTES = 64 * 1024 * 1024

/** What one message, with its data as the payload carries it, may take: the payload limit less room for the batch's own fields. */
export const MAX_MESSAGE_BYTES = MAX_BATCH_PAYLOAD_BYTES - 64 * 1024

/**
 * The most messages one batch may carry, on every member. A receiver refuses a batch with more as malformed, reading
 * no further than this: what reading a batch costs is bounded by the limits, not by how many tiny items its text can
 * list. A member's `batch.size` may not be set higher, so that no member sends what the others refuse.
 */
export const MAX_MESSAGES_PER_BATCH = 10_000

/**
 * The most topics, and data references, the messages of one batch may name in all: what MAX_MESSAGES_PER_BATCH
 * messages at the per-message limits name. A message past a per-message limit is rejected as a message, its pins
 * consumed (see messageLimitProblem); only a batch past these totals, which no batch within the limits reaches, is
 * refused as malformed, read no further.
 */
export const MAX_TOPICS_PER_BATCH = MAX_MESSAGES_PER_BATCH * MAX_TOPICS_PER_MESSAGE
export const MAX_DATA_REFS_PER_BATCH = MAX_MESSAGES_PER_BATCH * MAX_DATA_PER_MESSAGE

/**
 * A batch's life on this node. Sent: `sealed` → `pinned` (pinBatch mined; `payloadRef` set then). A stored batch may
 * also be `uploaded` (the upload recorded on its own), which nothing here writes; it resumes like `sealed`.
 * Received: `received` (downloaded and verified) or `refused` (did not verify; never used).
 */
/** `sent`: an unpinned private batch of this node, queued durably for its members; it is never pinned. */
export type BatchState = 'sealed' | 'uploaded' | 'pinned' | 'sent' | 'received' | 'refused'

/** A batch's transaction type (FireFly's): `batch_pin` when pinned on chain, `unpinned` for a private batch that is not. */
export type BatchTxType = 'batch_pin' | 'unpinned'

/** The transaction type of a batch carrying these messages (one batch never mixes pinned and unpinned messages). */
export function batchTxTypeOf(messages: readonly { header: { txtype: string } }[]): BatchTxType {
  return messages[0]?.header.txtype === 'none' ? 'unpinned' : 'batch_pin'
}

export interface BatchRecord {
  id: BatchId
  type: BatchType
  namespace: string
  author: string
  key: string
  node?: string
  group?: Hash
  created: Timestamp
  hash: Hash
  manifest: string
  txId: TxId
  payloadRef?: string
  state: BatchState
  local: boolean
  chainTx?: string
  reason?: string
  /** This member's batch: when it was made available (uploaded; private: deliveries queued), recorded with its pin. */
  uploaded?: Timestamp
  /** This member's batch: when the chain took its pin transaction, recorded with its pin. */
  pinSent?: Timestamp
  /** Another member's batch: when this member stored it. */
  received?: Timestamp
  /** Another member's batch that brought messages held from another batch: what it carried is recorded (schema v21). */
  carried?: boolean
}

/** A batch as it travels: the JSON written to shared storage (broadcast) or sent peer to peer (private). */
export interface BatchPayload {
  id: BatchId
  type: BatchType
  namespace: string
  node?: string
  author: string
  key: string
  group?: Hash
  created: Timestamp
  hash: Hash
  tx: { type: BatchTxType; id: TxId }
  messages: BatchMessage[]
  data: Data[]
}

/** A message inside a batch payload: what its hash and pins cover, without local state. */
export interface BatchMessage {
  header: Header
  hash: Hash
  data: DataRef[]
  pins?: string[]
}
