import { keccak256, type TransactionRequest } from 'ethers'
import type { TxSigner } from './key-address.js'
import { JsonRpcClient, RpcError, toQuantity } from './rpc.js'
import { signEip1559 } from './tx-encode.js'

/** A transaction signed locally: the exact bytes, so a resend after a lost answer is the same transaction. */
export interface SignedTx {
  raw: string
  hash: string
  nonce: number
}

export interface RpcReceipt {
  transactionHash: string
  blockNumber: string
  status?: string
  contractAddress?: string | null
}

const ONE_GWEI = 1_000_000_000n

/** EIP-1559 fees when the chain has a base fee (2 × base + tip, as ethers does), a legacy gas price otherwise. */
export async function feeFields(rpc: JsonRpcClient): Promise<Partial<TransactionRequest>> {
  const block = await rpc.call<{ baseFeePerGas?: string }>('eth_getBlockByNumber', ['latest', false])
  if (block.baseFeePerGas === undefined) return { type: 0, gasPrice: BigInt(await rpc.call<string>('eth_gasPrice')) }
  return eip1559Fees(BigInt(block.baseFeePerGas), await priorityFee(rpc))
}

export function eip1559Fees(baseFee: bigint, tip: bigint): Partial<TransactionRequest> {
  return { type: 2, maxFeePerGas: 2n * baseFee + tip, maxPriorityFeePerGas: tip }
}

/** The endpoint's suggested tip; 1 gwei (ethers' default) when it has no such method. */
export function priorityFee(rpc: JsonRpcClient): Promise<bigint> {
  return rpc.call<string>('eth_maxPriorityFeePerGas').then(BigInt, (err: unknown) => {
    if (err instanceof RpcError && err.transport) throw err
    return ONE_GWEI
  })
}

/** Estimates a call's gas, as the node that will run it would. */
export async function estimateGas(rpc: JsonRpcClient, call: { from: string; to: string | null; data: string; value?: bigint }): Promise<bigint> {
  const params: Record<string, string> = { from: call.from, data: call.data, value: toQuantity(call.value ?? 0n) }
  if (call.to !== null) params.to = call.to
  return BigInt(await rpc.call<string>('eth_estimateGas', [params]))
}

/**
 * Prices, estimates (with headroom) and signs a transaction with an explicit nonce; nothing is sent.
 * Nonces are the caller's: the node and the deploy script track them so that back-to-back transactions
 * from one key never reuse a stale count.
 */
export async function signTransaction(
  rpc: JsonRpcClient,
  wallet: TxSigner,
  tx: { chainId: bigint; nonce: number; to: string | null; data: string | Uint8Array; value?: bigint; gasLimit?: bigint },
  fees?: Partial<TransactionRequest>,
): Promise<SignedTx> {
  const value = tx.value ?? 0n
  let gasLimit = tx.gasLimit
  const hexData = (): string => (typeof tx.data === 'string' ? tx.data : '0x' + Buffer.from(tx.data).toString('hex'))
  if (gasLimit === undefined) gasLimit = ((await estimateGas(rpc, { from: wallet.address, to: tx.to, data: hexData(), value })) * 12n) / 10n
  const f = fees ?? (await feeFields(rpc))
  if (f.type === 2 && f.maxFeePerGas != null && f.maxPriorityFeePerGas != null) {
    const data = typeof tx.data === 'string' ? hexToBytes(tx.data) : tx.data
    const maxFeePerGas = BigInt(f.maxFeePerGas)
    const maxPriorityFeePerGas = BigInt(f.maxPriorityFeePerGas)
    const { raw, hash } = signEip1559(wallet.signingKey, { chainId: tx.chainId, nonce: tx.nonce, maxFeePerGas, maxPriorityFeePerGas, gasLimit, to: tx.to, value, data })
    return { raw, hash, nonce: tx.nonce }
  }
  // A chain without a base fee is rare enough (and its transactions small enough) to leave to ethers.
  const raw = await wallet.signTransaction({ ...f, chainId: tx.chainId, nonce: tx.nonce, to: tx.to, data: hexData(), value, gasLimit })
  return { raw, hash: keccak256(raw), nonce: tx.nonce }
}

/** Buffer.from(hex) stops quietly at the first bad character: a malformed string is refused instead, as ethers would. */
function hexToBytes(hex: string): Buffer {
  if (!/^0x(?:[0-9a-fA-F]{2})*$/.test(hex)) throw new TypeError(`transaction data is not 0x-prefixed hex bytes: ${hex.slice(0, 20)}...`)
  return Buffer.from(hex.slice(2), 'hex')
}

export async function pendingNonce(rpc: JsonRpcClient, address: string): Promise<number> {
  return Number(await rpc.call<string>('eth_getTransactionCount', [address, 'pending']))
}

/** True when the endpoint knows the transaction (pending or mined): a send whose answer was lost arrived. */
export async function isKnown(rpc: JsonRpcClient, hash: string): Promise<boolean> {
  return (await rpc.call<unknown>('eth_getTransactionByHash', [hash])) !== null
}

export function getReceipt(rpc: JsonRpcClient, hash: string): Promise<RpcReceipt | null> {
  return rpc.call<RpcReceipt | null>('eth_getTransactionReceipt', [hash])
}

/** Node and Hardhat phrasings of "this nonce is no longer (or not yet) usable": re-read the count and re-sign. */
export function isNonceError(err: unknown): boolean {
  return err instanceof RpcError && !err.transport && /nonce too (low|high)|nonce has already been used|invalid nonce/i.test(err.message)
}
