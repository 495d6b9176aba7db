import type { BatchId, Hash, TxId } from '../core/ids.js'
import type { BatchType } from './batch.js'

/** One on-chain context of a pinned batch, in the order this node read it from the chain (`seq`). */
export interface Pin {
  seq: number
  batchId: BatchId
  batchHash: Hash
  /** Position of this context in the batch's contexts array. */
  index: number
  hash: Hash
  /** A private pin: its hash hides topic, group, author and nonce. */
  masked: boolean
  /** The key that submitted the pin. */
  signer: string
  eventId: string
  /** Confirmed or rejected: it no longer holds later pins of its context back. */
  dispatched: boolean
  /** A private pin whose hash its signer pinned before (schema v22): an earlier copy may decide it. */
  repeated: boolean
}

/**
 * A pin that names a payload reference (not masked) is a broadcast pin, whoever signs it: it decides only a broadcast
 * batch fetched from there, never anything of a private batch of the same id and hash, which members outside its group
 * do not hold. Every member, holding that batch or not, leaves such a pin waiting for its own payload.
 */
export function broadcastPinOfPrivate(pin: Pin, batchType: BatchType): boolean {
  return !pin.masked && batchType === 'private'
}

/** A broadcast batch as its pin announces it: what a member needs to fetch and check it. */
export interface PinnedBatch {
  batchId: BatchId
  batchHash: Hash
  txId: TxId
  payloadRef: string
  signer: string
  /** The BatchPin event that announced it: a payload refused frees that event's pins only. */
  eventId: string
}
