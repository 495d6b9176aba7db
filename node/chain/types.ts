/**
 * The chain seam: how a member node pins batches on the BatchPin contract and learns of everyone's pins.
 * Small on purpose: the node's managers see events and a submit call, never ethers or JSON-RPC, and a test
 * (or a production user) can point it at any Ethereum JSON-RPC endpoint.
 */
import type { Gate } from '../core/gate.js'
import type { BatchId, Hash, TxId } from '../core/ids.js'
import type { BatchPinEvent } from '../model/index.js'
import type { PinSubmission } from './pin-submission.js'

export type { MinedPin, PinSubmission } from './pin-submission.js'


export interface PinBatchRequest {
  txId: TxId
  batchId: BatchId
  batchHash: Hash
  payloadRef: string
  contexts: Hash[]
}

export interface ChainStatus {
  connected: boolean
  rpc: string
  contract: string
  networkVersion?: number
  headBlock?: number
  /** The last block whose events the node has persisted (the stored cursor minus one). */
  lastProcessedBlock: number
  error?: string
}

export interface Chain {
  /**
   * Connects, verifies the contract (code present, `networkVersion() == 2`) and begins following. Never
   * throws for an unreachable chain or a wrong address: it logs one line saying what is wrong and retries
   * with backoff, logging again only when the reason changes.
   */
  start(): void
  /**
   * Pins a batch, signed with the member's key. Submissions are sent one at a time in call order with locally
   * tracked nonces, so pin order is call order; transient failures are retried. `sent` resolves once the chain has
   * the transaction, the submission itself once it is mined. A send that fails for good rejects `sent`, and a
   * caller that must keep its batches in order submits the next one only after `sent`, retrying a failed one
   * first. Rejects with UNAVAILABLE when the chain is stopped or `signal` aborts: the caller stops waiting, but a
   * transaction already sent may still be mined (a batch pinned again later is ordered once, by its first pin).
   */
  submitPinBatch(req: PinBatchRequest, signal?: AbortSignal): PinSubmission
  status(): ChainStatus
  stop(): Promise<void>
}

export interface ChainOptions {
  /** HTTP JSON-RPC URL; new-block notifications come from the WebSocket at the same address. */
  rpc: string
  contract: string
  privateKey: string
  /** The stored cursor: the next block to process. */
  fromBlock: number
  /**
   * Receives the events of blocks up to `throughBlock`, in chain order (an empty array when there were none,
   * so the cursor still moves). The node persists events and cursor atomically, then resolves; the chain
   * moves on only after that, and offers the same range again if it rejects.
   */
  onEvents: (events: BatchPinEvent[], throughBlock: number) => Promise<void>
  log: (line: string) => void
  /** Blocks per eth_getLogs request (default 2000; halved when the endpoint refuses a range). */
  chunkSize?: number
  /** The fallback poll, in case a new-block notification is lost (default 5000 ms). */
  pollIntervalMs?: number
  /**
   * While held, no BatchPin log is read: the range in flight is handed over, then the follower waits, its cursor where
   * it stood, and the member falls behind the chain. Released, it catches up from that cursor at once, so nothing is
   * lost or repeated. Submitting pins goes on meanwhile. (The admin routes' chain hold.)
   */
  readGate?: Gate
}
