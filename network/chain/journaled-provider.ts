import { EventEmitter } from 'node:events'
import { keccak256 } from 'ethers'
import type { EIP1193Provider, RequestArguments } from 'hardhat/types/provider.js'
import { errorMessage } from '../../node/core/errors.js'
import { ReadWriteGate } from './gate.js'
import type { ChainJournal, JournalBlock } from './journal.js'
import { rawFromMinedTransaction, type RpcTransaction } from './raw-tx.js'

/**
 * A JSON-RPC error that Hardhat's server passes on with its own code and message. The server recognises its
 * `ProviderError` by the `_isProviderError` mark (anything else becomes "Internal error"), so we carry it.
 */
export class ChainRpcError extends Error {
  readonly _isProviderError = true
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message)
  }
}

/** -32004 is "method not supported" in Hardhat's (and EIP-1474's) numbering. */
const METHOD_NOT_SUPPORTED = -32004

type Kind = 'read' | 'mine' | 'clock' | 'refused'

/** Calls that may mine a block: each block they mine is journaled before they answer. */
const MINING = new Set(['eth_sendRawTransaction', 'eth_sendTransaction', 'evm_mine'])
/**
 * Calls that only move the clock for future blocks: harmless to replay, because the journal records the
 * timestamp each block was actually mined with.
 */
const CLOCK = new Set(['evm_increaseTime', 'evm_setNextBlockTimestamp'])
const READ_EXTRA = new Set(['hardhat_metadata', 'hardhat_getAutomine', 'hardhat_getStackTraceFailuresCount'])

function classify(method: string): Kind {
  if (MINING.has(method)) return 'mine'
  if (CLOCK.has(method)) return 'clock'
  if (READ_EXTRA.has(method)) return 'read'
  // Everything else that is `hardhat_*`/`evm_*` rewrites state or history outside a transaction (snapshots,
  // reverts, resets, balance/code/storage/nonce edits, impersonation, mining switches): it cannot be replayed.
  if (/^(eth|net|web3)_/.test(method) || method.startsWith('debug_trace') || method === 'personal_sign') return 'read'
  return 'refused'
}

/**
 * The Hardhat provider as Parley's chain serves it: every block it mines is appended to the journal and
 * fsynced before the request that mined it is answered, and before anyone can read it (see ReadWriteGate);
 * calls that would make the history unreplayable are refused with a JSON-RPC error.
 */
export class JournaledProvider extends EventEmitter implements EIP1193Provider {
  private readonly gate = new ReadWriteGate()
  /** Subscription notifications raised while a block was being mined, released once it is durable. */
  private held: Array<[string, unknown]> = []
  private broken: string | undefined

  constructor(
    private readonly inner: EIP1193Provider,
    private readonly journal: ChainJournal,
    /** Called when a mined block could not be journaled: the process must stop rather than serve it. */
    private readonly onFatal: (err: Error) => void,
  ) {
    super()
    // Hardhat's server adds one listener per WebSocket client; a network of many members is not a leak.
    this.setMaxListeners(0)
    for (const event of ['notification', 'message']) {
      inner.on(event, (payload: unknown) => {
        if (this.gate.isWriting) this.held.push([event, payload])
        else this.emit(event, payload)
      })
    }
  }

  async request(args: RequestArguments): Promise<unknown> {
    if (this.broken !== undefined) throw new ChainRpcError(`chain is stopping: ${this.broken}`, -32603)
    switch (classify(args.method)) {
      case 'read':
        return this.gate.read(() => this.inner.request(args))
      case 'clock':
        return this.gate.write(() => this.inner.request(args))
      case 'mine':
        return this.gate.write(() => this.mineAndJournal(args))
      case 'refused':
        throw new ChainRpcError(
          `${args.method} is refused: this chain is journaled so that it survives restarts, and ${args.method} would ` +
            'make its history unreplayable. Send signed transactions (eth_sendRawTransaction) instead.',
          METHOD_NOT_SUPPORTED,
        )
    }
  }

  /** Waits for the request in flight (if any) to finish journaling; used on shutdown. */
  drain(): Promise<void> {
    return this.gate.write(async () => undefined)
  }

  private async mineAndJournal(args: RequestArguments): Promise<unknown> {
    const before = await this.blockNumber()
    let result: unknown
    let failure: unknown
    let failed = false
    try {
      result = await this.inner.request(args)
    } catch (err) {
      // A reverted transaction is still mined (Hardhat answers with an error): it is journaled all the same.
      failure = err
      failed = true
    }
    try {
      const after = await this.blockNumber()
      const knownRaw = args.method === 'eth_sendRawTransaction' ? firstParam(args) : undefined
      const blocks: JournalBlock[] = []
      for (let n = before + 1; n <= after; n++) blocks.push(await this.describeBlock(n, knownRaw))
      this.journal.append(blocks)
    } catch (err) {
      this.broken = `a mined block could not be journaled: ${errorMessage(err)}`
      this.held = []
      this.onFatal(new Error(this.broken))
      throw new ChainRpcError(`chain is stopping: ${this.broken}`, -32603)
    }
    const held = this.held
    this.held = []
    for (const [event, payload] of held) this.emit(event, payload)
    if (failed) throw failure
    return result
  }

  private async describeBlock(n: number, knownRaw: string | undefined): Promise<JournalBlock> {
    const block = (await this.inner.request({ method: 'eth_getBlockByNumber', params: [toQuantity(n), true] })) as {
      hash: string
      timestamp: string
      transactions: RpcTransaction[]
    }
    const knownHash = knownRaw !== undefined ? keccak256(knownRaw) : undefined
    const txs = block.transactions.map((tx) =>
      knownRaw !== undefined && tx.hash.toLowerCase() === knownHash ? knownRaw : rawFromMinedTransaction(tx),
    )
    return { n, t: Number(block.timestamp), h: block.hash, txs }
  }

  private async blockNumber(): Promise<number> {
    return Number(await this.inner.request({ method: 'eth_blockNumber' }))
  }
}

function firstParam(args: RequestArguments): string | undefined {
  const p = Array.isArray(args.params) ? (args.params as unknown[])[0] : undefined
  return typeof p === 'string' ? p.toLowerCase() : undefined
}

export function toQuantity(n: number): string {
  return '0x' + n.toString(16)
}
