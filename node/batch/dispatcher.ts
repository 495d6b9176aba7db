import type { Hash } from '../core/ids.js'
import type { Tx } from '../db/database.js'
import type { BatchPayload, BatchRecord, BatchType, Message } from '../model/index.js'

/** A batch as sealed: its record (durable) and its payload, in the exact order its manifest hash covers. */
export interface SealedBatch {
  record: BatchRecord
  payload: BatchPayload
}

/**
 * Delivers sealed batches of one type (FireFly's batch manager RegisterDispatcher): broadcast publishes to shared
 * storage, private sends to each member over the exchange. The batch manager seals, orders and pins; a dispatcher
 * only makes the batch available and says what its pin carries.
 */
export interface Dispatcher {
  readonly type: BatchType
  /**
   * Makes the batch available to its recipients and answers the pin's payload reference (a broadcast's CID; empty
   * for a private batch). Called again after a failure (with backoff) and after a restart, so it must be idempotent.
   * Rejects when `signal` aborts.
   */
  prepare(batch: SealedBatch, signal: AbortSignal): Promise<string>
  /**
   * Called inside the sealing transaction with the batch's messages in manifest order: answers them as they must be
   * stored and carried (a private dispatcher allocates their pin nonces here and records `pins`, so a seal that rolls
   * back gives its nonces back). Optional: a broadcast carries its messages unchanged.
   */
  seal?(tx: Tx, record: BatchRecord, messages: readonly Message[]): Message[]
  /** The batch's on-chain contexts, in manifest order: one per topic per message. */
  contexts(batch: SealedBatch): Hash[]
}
