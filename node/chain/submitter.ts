import { Backoff } from '../core/backoff.js'
import type { TransactionRequest } from 'ethers'
import type { TxSigner } from './key-address.js'
import { errorMessage, ParleyError } from '../core/errors.js'
import { encodePinBatch, encodePinBatchBytes } from './abi.js'
import type { ProblemLog } from './problems.js'
import { JsonRpcClient, RpcError } from './rpc.js'
import { eip1559Fees, estimateGas, feeFields, getReceipt, isKnown, isNonceError, pendingNonce, priorityFee, signTransaction, type SignedTx } from './tx.js'
import type { Head } from './heads.js'
import type { PinBatchRequest } from './types.js'
import { failedSubmission, pinSubmission, type PinSubmission } from './pin-submission.js'
import type { BatchId, Hash, TxId } from '../core/ids.js'

/** A pin the gas line is measured with: its values do not matter, only its shape. */
const GAS_SAMPLE = { txId: '00000000-0000-4000-8000-000000000001' as TxId, batchId: '00000000-0000-4000-8000-000000000002' as BatchId, batchHash: 'ab'.repeat(32) as Hash }
const NONZERO_HASH = 'cd'.repeat(32) as Hash

export interface SubmitterDeps {
  rpc: JsonRpcClient
  wallet: TxSigner
  contract: string
  problems: ProblemLog
  /** Resolves with the chain id once the chain is reachable and the contract verified; rejects on stop or abort. */
  ready(signal?: AbortSignal): Promise<bigint>
  /** Resolves on the next new block, after `ms`, on stop or on abort, whichever comes first. */
  nextHead(ms: number, signal?: AbortSignal): Promise<void>
  stopped(): boolean
  /** The newest block the chain has announced, if any, with its base fee: fees are priced once per block. */
  head(): Head | undefined
}

const MIN_RETRY_MS = 250
const MAX_RETRY_MS = 5000
const RECEIPT_POLL_MS = 2000
/**
 * How long a suggested tip is reused. The base fee comes with each announced block, so only the tip would need a call
 * per block; it moves slowly, and a send refused for its fee asks again at once.
 */
const TIP_MAX_AGE_MS = 10_000

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
  private gas: Promise<{ base: bigint; perContext: bigint; perRefByte: bigint }> | undefined
  private feeCache: { block: number; fields: Partial<TransactionRequest> } | undefined
  private tipCache: { at: number; tip: bigint } | undefined

  constructor(private readonly deps: SubmitterDeps) {}

  submit(req: PinBatchRequest, signal?: AbortSignal): PinSubmission {
    let data: Buffer
    try {
      data = encodePinBatchBytes(req)
    } catch (err) {
      return failedSubmission(err)
    }
    // Only the send is serialized: confirmations of earlier pins may still be outstanding while later ones go.
    const sent = this.tail.then(() => this.send(req, data, signal))
    this.tail = sent.catch(() => undefined)
    return pinSubmission(
      sent.then((tx) => tx.hash),
      sent.then((tx) => this.confirm(tx, signal)),
    )
  }

  private assertRunning(signal: AbortSignal | undefined): void {
    if (this.deps.stopped()) throw new ParleyError('UNAVAILABLE', 'the chain connection was stopped')
    if (signal?.aborted) throw new ParleyError('UNAVAILABLE', 'the pinBatch submission was abandoned (its sender is stopping)')
  }

  private async send(req: PinBatchRequest, data: Buffer, signal: AbortSignal | undefined): Promise<SignedTx> {
    const { rpc, wallet, contract, problems } = this.deps
    let signed: SignedTx | undefined
    const backoff = new Backoff(MIN_RETRY_MS, MAX_RETRY_MS)
    for (;;) {
      this.assertRunning(signal)
      try {
        const chainId = await this.deps.ready(signal)
        if (signed === undefined) {
          this.nonce ??= await pendingNonce(rpc, wallet.address)
          signed = await signTransaction(rpc, wallet, { chainId, nonce: this.nonce, to: contract, data, gasLimit: await this.gasLimit(req, data) }, await this.fees())
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
          if (retryReason(err) === 'fee') this.tipCache = this.feeCache = undefined
        }
        // An unreachable endpoint is reported by the follower (same endpoint, same outage); the rest is ours.
        if (!(err instanceof RpcError && err.transport)) {
          problems.report('submit', `chain: pinBatch from ${wallet.address.toLowerCase()} not sent yet: ${errorMessage(err)}; retrying`, retryReason(err))
        }
        await this.deps.nextHead(backoff.next(), signal)
      }
    }
  }

  /**
   * pinBatch only emits an event, so its execution gas grows linearly with its contexts and payload reference
   * (calldata, log data): the line is measured once from the contract, instead of an estimate per pin, with the usual
   * 20 % headroom. Since Prague a transaction also pays at least a calldata floor (EIP-7623), computed from the bytes.
   */
  private async gasLimit(req: PinBatchRequest, data: Buffer): Promise<bigint> {
    this.gas ??= this.measureGas().catch((err: unknown) => {
      this.gas = undefined
      throw err
    })
    const g = await this.gas
    const linear = g.base + g.perContext * BigInt(req.contexts.length) + (g.perRefByte * BigInt(Buffer.byteLength(req.payloadRef)) + 45n) / 46n
    const execution = (linear * 12n) / 10n + 10_000n
    const floor = calldataFloor(data)
    return execution > floor ? execution : floor + 10_000n
  }

  private async measureGas(): Promise<{ base: bigint; perContext: bigint; perRefByte: bigint }> {
    const { rpc, wallet, contract } = this.deps
    const sample = (contexts: number, payloadRef: string) =>
      estimateGas(rpc, { from: wallet.address, to: contract, data: encodePinBatch({ ...GAS_SAMPLE, payloadRef, contexts: new Array<Hash>(contexts).fill(NONZERO_HASH) }) })
    const [base, ten, ref] = await Promise.all([sample(0, ''), sample(10, ''), sample(0, 'Q'.repeat(46))])
    // perRefByte is per 46 bytes (a CID's length), kept whole: gasLimit divides it back.
    return { base, perContext: (ten - base + 9n) / 10n, perRefByte: ref - base }
  }

  /** Fee fields for the current block, priced once per block the chain announces. */
  private async fees(): Promise<Partial<TransactionRequest>> {
    const head = this.deps.head()
    if (head !== undefined && this.feeCache?.block === head.number) return this.feeCache.fields
    const fields = head?.baseFee !== undefined ? eip1559Fees(head.baseFee, await this.tip()) : await feeFields(this.deps.rpc)
    if (head !== undefined) this.feeCache = { block: head.number, fields }
    return fields
  }

  private async tip(): Promise<bigint> {
    const now = Date.now()
    if (this.tipCache === undefined || now - this.tipCache.at > TIP_MAX_AGE_MS) this.tipCache = { at: now, tip: await priorityFee(this.deps.rpc) }
    return this.tipCache.tip
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

/** EIP-7623's minimum: 21,000 + 10 per calldata token, a zero byte one token and any other byte four. */
function calldataFloor(data: Uint8Array): bigint {
  let tokens = 0
  for (let i = 0; i < data.length; i++) tokens += data[i] === 0 ? 1 : 4
  return 21_000n + 10n * BigInt(tokens)
}
