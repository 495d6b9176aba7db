/**
 * What anyone can read from the chain's pool while it does not mine: the pinBatch transactions waiting there, with
 * the batch ids, hashes and contexts they will pin, and the tips they pay (the pool mines the highest first).
 */
import { batchPinInterface } from '../../node/chain/abi.js'
import { splitUuids } from '../../node/core/hashes.js'
import type { BatchId, Hash, TxId } from '../../node/core/ids.js'
import { JsonRpcClient } from '../../node/chain/rpc.js'
import { sleep } from '../process.js'

/** A transaction of the pool, as `eth_getBlockByNumber('pending', true)` lists it. */
export interface PoolTransaction {
  hash: string
  from: string
  to?: string | null
  input: string
  maxPriorityFeePerGas?: string
  gasPrice?: string
}

/** A pinBatch transaction waiting in the pool. */
export interface PendingPin {
  txHash: string
  /** The signer, lowercase. */
  from: string
  /** Its tip in wei per gas (the gas price of a legacy transaction). */
  tip: bigint
  txId: TxId
  batchId: BatchId
  batchHash: Hash
  payloadRef: string
  contexts: Hash[]
}

const strip = (h: string): Hash => h.toLowerCase().replace(/^0x/, '') as Hash

/** The pin a pool transaction would make: undefined for anything but a well-formed pinBatch call to `contract`. */
export function decodePendingPin(tx: PoolTransaction, contract: string): PendingPin | undefined {
  if (tx.to?.toLowerCase() !== contract.toLowerCase()) return undefined
  let args
  try {
    args = batchPinInterface.decodeFunctionData('pinBatch', tx.input)
  } catch {
    return undefined
  }
  const [uuids, batchHash, payloadRef, contexts] = args as unknown as [string, string, string, string[]]
  const { txId, batchId } = splitUuids(uuids)
  return {
    txHash: tx.hash,
    from: tx.from.toLowerCase(),
    tip: BigInt(tx.maxPriorityFeePerGas ?? tx.gasPrice ?? '0x0'),
    txId,
    batchId,
    batchHash: strip(batchHash),
    payloadRef,
    contexts: contexts.map(strip),
  }
}

/** The pinBatch transactions in the pool now, in the pool's order. */
export async function pendingPins(rpcUrl: string, contract: string): Promise<PendingPin[]> {
  const rpc = new JsonRpcClient(rpcUrl)
  try {
    const block = await rpc.call<{ transactions?: PoolTransaction[] } | null>('eth_getBlockByNumber', ['pending', true])
    return (block?.transactions ?? []).flatMap((tx) => decodePendingPin(tx, contract) ?? [])
  } finally {
    rpc.close()
  }
}

/**
 * Waits for a pinBatch in the pool from a signer other than `self` whose batch id `skip` does not hold (those seen
 * before the wait began, say), and answers the first. Rejects after `timeoutMs` naming what the pool held.
 */
export async function nextPendingPin(rpcUrl: string, contract: string, opts: { self: string; skip: ReadonlySet<string>; timeoutMs: number }): Promise<PendingPin> {
  const deadline = Date.now() + opts.timeoutMs
  let held = 0
  for (;;) {
    const pins = await pendingPins(rpcUrl, contract)
    held = pins.length
    const found = pins.find((p) => p.from !== opts.self.toLowerCase() && !opts.skip.has(p.batchId))
    if (found) return found
    if (Date.now() > deadline) {
      throw new Error(`no other member's pinBatch came into the chain's pool within ${opts.timeoutMs} ms (it holds ${held}); is mining off (network -- mining off)?`)
    }
    await sleep(50)
  }
}
