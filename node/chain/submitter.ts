import { Backoff } from '../core/backoff.js'
import type { Wallet } from 'ethers'
import { errorMessage, ParleyError } from '../core/errors.js'
import { encodePinBatch } from './abi.js'
import type { ProblemLog } from './problems.js'
import { JsonRpcClient, RpcError } from './rpc.js'
import { getReceipt, isKnown, isNonceError, pendingNonce, signTransaction, type SignedTx } from './tx.js'
import type { PinBatchRequest } from './types.js'

export interface SubmitterDeps {
  rpc: JsonRpcClient
  wallet: Wallet
  contract: string
  problems: ProblemLog
  /** Resolves with the chain id once the chain is reachable and the contract verified; rejects on stop or abort. */
  ready(signal?: AbortSignal): Promise<bigint>
  /** Resolves on the next new block, after `ms`, on stop or on abort, whichever comes first. */
  nextHead(ms: number, signal?: AbortSignal): Promise<void>
  stopped(): boolean
}

const MIN_RETRY_MS = 250
const MAX_RETRY_MS = 5000
const RECEIPT_POLL_MS = 2000

/** Failures worth waiting out: the endpoint is away, a fee moved, or the account is not funded yet. */
function isRetryable(err: unknown): boolean {
  if (!(err instanceof RpcError)) return false
  if (err.transport) return true
  return /underpriced|fee too low|less than block base fee|insufficient funds|enough funds/i.test(err.message)
}

/** A stable name for a retry's cause: the messages carry amounts and nonces that change on every attempt. */
function retryReason(err: unknown): string {
  const msg = errorMessage(err)
  if (/insufficient funds|enough funds/i.test(msg)) return 'funds'
  if (/underpriced|fee too low|base fee/i.test(msg)) return 'fee'
  if (isNonceError(err)) return 'nonce'
  return msg
}

/**
 * Sends pinBatch transactions one at a time, in call order, with a nonce tracked here rather than asked
 * for each time, so pins land on chain in the order the node submitted them. Each transaction is signed
 * once and the same bytes are resent after a lost answer, so a retry can never pin a batch twice.
 */
export class PinSubmitter {
  private tail: Promise<unknown> = Promise.resolve()
  private nonce: number | undefined

  constructor(private readonly deps: SubmitterDeps) {}

  submit(req: PinBatchRequest, signal?: AbortSignal): Promise<{ txHash: string; blockNumber: number }> {
    let data: string
    try {
      data = encodePinBatch(req)
    } catch (err) {
      return Promise.reject(err)
    }
    // Only the send is serialized: confirmations of earlier pins may still be outstanding while later ones go.
    const sent = this.tail.then(() => this.send(data, signal))
    this.tail = sent.catch(() => undefined)
    return sent.then((tx) => this.confirm(tx, signal))
  }

  private assertRunning(signal: AbortSignal | undefined): void {
    if (this.deps.stopped()) throw new ParleyError('UNAVAILABLE', 'the chain connection was stopped')
    if (signal?.aborted) throw new ParleyError('UNAVAILABLE', 'the pinBatch submission was abandoned (its sender is stopping)')
  }

  private async send(data: string, signal: AbortSignal | undefined): Promise<SignedTx> {
    const { rpc, wallet, contract, problems } = this.deps
    let signed: SignedTx | undefined
    const backoff = new Backoff(MIN_RETRY_MS, MAX_RETRY_MS)
    for (;;) {
      this.assertRunning(signal)
      try {
        const chainId = await this.deps.ready(signal)
        if (signed === undefined) {
          this.nonce ??= await pendingNonce(rpc, wallet.address)
          signed = await signTransaction(rpc, wallet, { chainId, nonce: this.nonce, to: contract, data })
        }
        await this.sendRaw(signed)
        this.nonce = signed.nonce + 1
        problems.clear('submit', `chain: pinBatch from ${wallet.address.toLowerCase()} is being sent again`)
        return signed
      } catch (err) {
        if (isNonceError(err)) {
          // Someone else used this key, or the chain is not the one we counted on: count again, sign again.
          this.nonce = undefined
          signed = undefined
        } else if (!isRetryable(err)) {
          throw err
        } else if (err instanceof RpcError && !err.transport) {
          signed = undefined // re-price (and re-check the balance) with a fresh signature
        }
        // An unreachable endpoint is reported by the follower (same endpoint, same outage); the rest is ours.
        if (!(err instanceof RpcError && err.transport)) {
          problems.report('submit', `chain: pinBatch from ${wallet.address.toLowerCase()} not sent yet: ${errorMessage(err)}; retrying`, retryReason(err))
        }
        await this.deps.nextHead(backoff.next(), signal)
      }
    }
  }

  /** Sends; an error still counts as sent when the chain has the transaction (a lost answer, or a mined revert). */
  private async sendRaw(tx: SignedTx): Promise<void> {
    try {
      await this.deps.rpc.call('eth_sendRawTransaction', [tx.raw])
    } catch (err) {
      if (err instanceof RpcError && err.transport) throw err
      if (!(await isKnown(this.deps.rpc, tx.hash))) throw err
    }
  }

  private async confirm(tx: SignedTx, signal: AbortSignal | undefined): Promise<{ txHash: string; blockNumber: number }> {
    const backoff = new Backoff(MIN_RETRY_MS, MAX_RETRY_MS)
    for (;;) {
      this.assertRunning(signal)
      try {
        const receipt = await getReceipt(this.deps.rpc, tx.hash)
        if (receipt !== null) {
          const blockNumber = Number(receipt.blockNumber)
          if (receipt.status === '0x0') {
            throw new ParleyError('INTERNAL', `pinBatch transaction ${tx.hash} reverted in block ${blockNumber}`)
          }
          return { txHash: tx.hash, blockNumber }
        }
        // Not mined yet. A transaction the endpoint has forgotten (dropped from its pool) is sent again.
        if (!(await isKnown(this.deps.rpc, tx.hash))) await this.sendRaw(tx).catch(() => undefined)
        await this.deps.nextHead(RECEIPT_POLL_MS, signal)
        backoff.reset()
      } catch (err) {
        if (!(err instanceof RpcError && err.transport)) throw err
        await this.deps.nextHead(backoff.next(), signal)
      }
    }
  }
}
