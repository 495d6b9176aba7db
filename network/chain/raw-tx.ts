import { Transaction, type TransactionLike } from 'ethers'

/** A transaction as `eth_getBlockByNumber(n, true)` returns it (only the fields a signed envelope needs). */
export interface RpcTransaction {
  hash: string
  type?: string
  chainId?: string
  nonce: string
  to?: string | null
  input: string
  value: string
  gas: string
  gasPrice?: string
  maxFeePerGas?: string
  maxPriorityFeePerGas?: string
  accessList?: Array<{ address: string; storageKeys: string[] }>
  v: string
  r: string
  s: string
}

/**
 * The signed bytes of a mined transaction, rebuilt from its fields. Hardhat signs `eth_sendTransaction` with
 * its own unlocked accounts and has no `eth_getRawTransactionByHash`, yet the journal needs the exact bytes
 * to replay the block. The result is checked against the transaction hash, so a wrong rebuild is never
 * journaled silently; types other than legacy, EIP-2930 and EIP-1559 are refused.
 */
export function rawFromMinedTransaction(tx: RpcTransaction): string {
  const type = Number(tx.type ?? '0x0')
  if (type > 2) throw new Error(`transaction ${tx.hash} has type ${type}; only types 0-2 can be journaled from eth_sendTransaction`)
  const v = BigInt(tx.v)
  // Legacy EIP-155 signatures carry the chain id inside v; typed transactions carry it as a field.
  const chainId = tx.chainId !== undefined ? BigInt(tx.chainId) : v >= 35n ? (v - 35n) / 2n : 0n
  const like: TransactionLike = {
    type,
    chainId,
    nonce: Number(tx.nonce),
    to: tx.to ?? null,
    data: tx.input,
    value: BigInt(tx.value),
    gasLimit: BigInt(tx.gas),
    signature: { r: tx.r, s: tx.s, v: Number(v) },
  }
  if (type === 2) {
    like.maxFeePerGas = BigInt(tx.maxFeePerGas ?? '0x0')
    like.maxPriorityFeePerGas = BigInt(tx.maxPriorityFeePerGas ?? '0x0')
  } else {
    like.gasPrice = BigInt(tx.gasPrice ?? '0x0')
  }
  if (type >= 1) like.accessList = tx.accessList ?? []
  const rebuilt = Transaction.from(like)
  if (rebuilt.hash !== tx.hash.toLowerCase()) {
    throw new Error(`transaction ${tx.hash} could not be rebuilt byte for byte (got ${rebuilt.hash})`)
  }
  return rebuilt.serialized
}
