import { keccak256, Transaction } from 'ethers'
import type { EIP1193Provider } from 'hardhat/types/provider.js'
import { errorMessage } from '../../node/core/errors.js'
import type { JournalBlock } from './journal.js'

export interface ReplayResult {
  blocks: number
  /** Blocks whose hash differs from the one recorded (numbers, transactions, their order and logs are still the same). */
  hashMismatches: number
  /** The hash of every transaction the replayed blocks hold. */
  mined: Set<string>
}

/**
 * Mines the journaled blocks again, in order, into a fresh Hardhat chain that has the same genesis: with mining
 * off, each block's transactions are sent in their recorded order and the block is mined by `evm_mine` with its
 * recorded timestamp. Hardhat's mining is deterministic given the same parent, timestamp and transactions, so
 * the blocks come out identical, hashes included; an empty block is a block like any other. A block of several
 * transactions comes out in the same order: Hardhat orders its mempool by fee and then by arrival, and arrival in
 * block order gives block order back (checked: a different order would move logs, so it fails the start).
 * Runs before the port is opened, and leaves mining off (see resendPending, then switch it on).
 */
export async function replayJournal(provider: EIP1193Provider, blocks: JournalBlock[]): Promise<ReplayResult> {
  const request = (method: string, params: unknown[] = []): Promise<unknown> => provider.request({ method, params })
  let hashMismatches = 0
  const mined = new Set<string>()
  let head = Number(await request('eth_blockNumber'))
  await request('evm_setAutomine', [false])
  for (const b of blocks) {
    if (b.n !== head + 1) throw new Error(`chain journal: expected block ${head + 1}, found block ${b.n}`)
    const hashes = b.txs.map((raw) => keccak256(raw))
    for (const raw of b.txs) {
      // Nothing runs before evm_mine: a transaction that reverted the first time is accepted, and reverts again.
      await request('eth_sendRawTransaction', [raw]).catch((err: unknown) => {
        throw new Error(`chain journal: block ${b.n}: ${errorMessage(err)}`)
      })
    }
    await request('evm_mine', [b.t]).catch((err: unknown) => {
      throw new Error(`chain journal: block ${b.n}: ${errorMessage(err)}`)
    })
    const block = (await request('eth_getBlockByNumber', ['latest', false])) as { number: string; hash: string; transactions: string[] }
    if (Number(block.number) !== b.n) throw new Error(`chain journal: replaying block ${b.n} did not mine it`)
    const got = block.transactions.map((h) => h.toLowerCase())
    if (got.join() !== hashes.join()) {
      throw new Error(`chain journal: replaying block ${b.n} mined ${got.length} transactions [${got.join(', ')}], not the ${hashes.length} recorded [${hashes.join(', ')}] in their order`)
    }
    if (block.hash !== b.h) hashMismatches++
    for (const h of hashes) mined.add(h)
    head = b.n
  }
  return { blocks: blocks.length, hashMismatches, mined }
}

export interface ResendResult {
  /** Sent again, in journal order. */
  resent: number
  /** Of those, mined now. */
  mined: number
  /** Of those, still in the mempool: they wait for a nonce that was never sent, as they did before the stop. */
  waiting: number
  /**
   * Not sent, their sender's nonce being used by a mined transaction already, or sent and then replaced in the
   * mempool by a later one of the same nonce and a higher fee (as happened before the stop).
   */
  replaced: number
  /** Refused by the chain when sent again, with its reason. */
  failed: Array<{ hash: string; error: string }>
  /** Blocks mined for them. */
  blocks: number
}

/**
 * After the replay: sends again the transactions journaled as pending that no journaled block holds (the chain
 * answered their hashes, then stopped before mining them), in the order the chain first accepted them, so each
 * sender's nonces arrive as they did (a nonce gap stays a gap, a replacement replaces again), and mines them,
 * several to a block as `evm_mine` would. `served` is the journaled provider, so the blocks mined here are
 * journaled like any other (the transactions are known to it as journaled pending: no new pending record is
 * written). Expects mining off, and leaves it off.
 */
export async function resendPending(served: EIP1193Provider, pending: readonly string[]): Promise<ResendResult> {
  const request = (method: string, params: unknown[] = []): Promise<unknown> => served.request({ method, params })
  const result: ResendResult = { resent: 0, mined: 0, waiting: 0, replaced: 0, failed: [], blocks: 0 }
  const sent: string[] = []
  const nonces = new Map<string, number>()
  for (const raw of pending) {
    const tx = Transaction.from(raw)
    const hash = tx.hash!.toLowerCase()
    const from = tx.from!.toLowerCase()
    let next = nonces.get(from)
    if (next === undefined) {
      next = Number(await request('eth_getTransactionCount', [from, 'latest']))
      nonces.set(from, next)
    }
    if (tx.nonce < next) {
      result.replaced++
      continue
    }
    try {
      await request('eth_sendRawTransaction', [raw])
      sent.push(hash)
      result.resent++
    } catch (err) {
      result.failed.push({ hash, error: errorMessage(err) })
    }
  }
  // One block takes every pending transaction that fits its gas limit; mine until nothing left can be mined.
  const unmined = new Set(sent)
  while (unmined.size > 0) {
    const next = (await request('eth_getBlockByNumber', ['pending', false])) as { transactions: string[] }
    if (next.transactions.length === 0) break
    await request('evm_mine')
    result.blocks++
    const block = (await request('eth_getBlockByNumber', ['latest', false])) as { transactions: string[] }
    for (const h of block.transactions) unmined.delete(h.toLowerCase())
    if (block.transactions.length === 0) break
  }
  result.mined = sent.length - unmined.size
  for (const hash of unmined) {
    if ((await request('eth_getTransactionByHash', [hash])) === null) result.replaced++
    else result.waiting++
  }
  return result
}
