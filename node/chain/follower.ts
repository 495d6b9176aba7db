import { errorMessage } from '../core/errors.js'
import { BATCH_PIN_TOPIC, decodeBatchPinLog, type RpcLog } from './abi.js'
import { JsonRpcClient, RpcError, toQuantity } from './rpc.js'
import { type BatchPinEvent } from '../model/index.js'

/** The node's `onEvents` rejected: the same range is offered again later, the cursor does not move. */
export class ConsumerError extends Error {
  /** Why, without the blocks: the range grows with the head while the same problem lasts (a full disk, say). */
  readonly reason: string

  constructor(
    readonly fromBlock: number,
    readonly toBlock: number,
    cause: unknown,
  ) {
    super(`storing the events of blocks ${fromBlock}-${toBlock} failed: ${errorMessage(cause)}`, { cause })
    this.reason = errorMessage(cause)
  }
}

/**
 * Reads BatchPin logs from a cursor to the chain head in bounded block ranges and hands them to the node in
 * chain order, moving the cursor only once the node has stored them. Stateless apart from the cursor, so a
 * node restarted from its stored cursor neither misses nor repeats a range.
 */
export class LogFollower {
  /** The next block to process. */
  cursor: number
  head: number | undefined
  private chunk: number

  constructor(
    private readonly rpc: JsonRpcClient,
    private readonly contract: string,
    fromBlock: number,
    private readonly maxChunk: number,
    private readonly onEvents: (events: BatchPinEvent[], throughBlock: number) => Promise<void>,
    private readonly log: (line: string) => void,
  ) {
    this.cursor = fromBlock
    this.chunk = maxChunk
  }

  /**
   * Processes everything up to the current head; throws RpcError or ConsumerError, leaving the cursor valid. A head
   * the chain announced (newHeads) saves asking for it; one with nothing new after the cursor is asked again, so that a
   * late announcement cannot report the chain as behind.
   */
  async catchUp(stopped: () => boolean, announced?: number): Promise<void> {
    const head = announced !== undefined && announced >= this.cursor ? announced : Number(await this.rpc.call<string>('eth_blockNumber'))
    this.head = head
    while (this.cursor <= head && !stopped()) {
      const from = this.cursor
      const to = Math.min(head, from + this.chunk - 1)
      const logs = await this.getLogs(from, to)
      if (logs === undefined) continue // the range was too large: retried smaller
      const events = this.decode(logs)
      try {
        await this.onEvents(events, to)
      } catch (err) {
        throw new ConsumerError(from, to, err)
      }
      this.cursor = to + 1
      // A range that worked lets the chunk grow back towards its configured size.
      this.chunk = Math.min(this.maxChunk, this.chunk * 2)
    }
  }

  private async getLogs(from: number, to: number): Promise<RpcLog[] | undefined> {
    try {
      return await this.rpc.call<RpcLog[]>('eth_getLogs', [
        { address: this.contract, topics: [BATCH_PIN_TOPIC], fromBlock: toQuantity(from), toBlock: toQuantity(to) },
      ])
    } catch (err) {
      // Public endpoints cap the range or the result size of eth_getLogs; ask for less rather than fail forever.
      if (err instanceof RpcError && !err.transport && to > from) {
        this.chunk = Math.max(1, Math.floor((to - from + 1) / 2))
        return undefined
      }
      throw err
    }
  }

  private decode(logs: RpcLog[]): BatchPinEvent[] {
    const events: BatchPinEvent[] = []
    for (const log of logs) {
      if (log.removed === true) continue
      try {
        events.push(decodeBatchPinLog(log))
      } catch (err) {
        // Skipped, not retried: the same bytes would fail the same way forever and hold up every later pin.
        this.log(`chain: skipping an undecodable BatchPin log in tx ${log.transactionHash}: ${errorMessage(err)}`)
      }
    }
    return events.sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex)
  }
}
