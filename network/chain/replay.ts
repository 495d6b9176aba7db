import type { EIP1193Provider } from 'hardhat/types/provider.js'
import { errorMessage } from '../../node/core/errors.js'
import type { JournalBlock } from './journal.js'
import { toQuantity } from './journaled-provider.js'

export interface ReplayResult {
  blocks: number
  /** Blocks whose hash differs from the one recorded (numbers, transactions and logs are still the same). */
  hashMismatches: number
}

/**
 * Mines the journaled blocks again, in order, each with its recorded timestamp, into a fresh Hardhat chain
 * that has the same genesis. Hardhat's mining is deterministic given the same parent, timestamp and
 * transactions, so the blocks come out identical, hashes included. Runs before the port is opened.
 */
export async function replayJournal(provider: EIP1193Provider, blocks: JournalBlock[]): Promise<ReplayResult> {
  const request = (method: string, params: unknown[] = []): Promise<unknown> => provider.request({ method, params })
  let hashMismatches = 0
  let head = Number(await request('eth_blockNumber'))
  for (const b of blocks) {
    if (b.n !== head + 1) throw new Error(`chain journal: expected block ${head + 1}, found block ${b.n}`)
    if (b.txs.length > 1) {
      // Automining puts one transaction in each block, and nothing else is allowed to mine.
      throw new Error(`chain journal: block ${b.n} has ${b.txs.length} transactions; this chain mines one per block`)
    }
    const raw = b.txs[0]
    if (raw === undefined) {
      await request('evm_mine', [b.t])
    } else {
      await request('evm_setNextBlockTimestamp', [toQuantity(b.t)])
      try {
        await request('eth_sendRawTransaction', [raw])
      } catch (err) {
        // A transaction that reverted the first time reverts again, and is mined again: that is expected.
        // Anything else shows up below as a block that was not mined.
        if (!/revert/i.test(errorMessage(err))) throw new Error(`chain journal: block ${b.n}: ${errorMessage(err)}`)
      }
    }
    const mined = (await request('eth_getBlockByNumber', ['latest', false])) as { number: string; hash: string }
    if (Number(mined.number) !== b.n) throw new Error(`chain journal: replaying block ${b.n} did not mine it`)
    if (mined.hash !== b.h) hashMismatches++
    head = b.n
  }
  return { blocks: blocks.length, hashMismatches }
}
