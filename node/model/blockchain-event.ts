import type { Address, BatchId, Hash, TxId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'

/** The `action` of a BatchPin log that pins a batch; network actions carry `firefly:<name>` and no contexts. */
export const BATCH_PIN_ACTION = 'firefly:batch_pin'

/** One BatchPin log, decoded. */
export interface BatchPinEvent {
  blockNumber: number
  txIndex: number
  logIndex: number
  /** FireFly's `%012d/%06d/%06d` of block, transaction index and log index: sorts in chain order. */
  protocolId: string
  txHash: string
  /** The signing key that pinned (tx.origin), lowercase. */
  author: Address
  /** The block timestamp, in unix seconds. */
  timestamp: number
  action: string
  /** From `uuids`: transaction id (first 16 bytes) ‖ batch id (last 16 bytes). */
  txId: TxId
  batchId: BatchId
  batchHash: Hash
  /** The IPFS CID of a broadcast batch; empty for a private batch. */
  payloadRef: string
  contexts: Hash[]
}

/** A BatchPin log as this node stored it, with the order it read it in. */
export interface StoredBlockchainEvent extends BatchPinEvent {
  seq: number
  id: string
  received: Timestamp
}
