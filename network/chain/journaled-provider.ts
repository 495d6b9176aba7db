import { EventEmitter } from 'node:events'
import { keccak256 } from 'ethers'
import type { EIP1193Provider, RequestArguments } from 'hardhat/types/provider.js'
import { errorMessage } from '../../node/core/errors.js'
import { ReadWriteGate } from './gate.js'
import type { ChainJournal, JournalBlock, JournalRecord } from './journal.js'
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

/** -32004 is "method not supported" in Hardhat's (and EIP-1474's) numbering; -32602 "invalid params". */
const METHOD_NOT_SUPPORTED = -32004
const INVALID_PARAMS = -32602

/** hardhat_mine's limit here: each block is described and journaled (a line each) and replayed at every start. */
export const MAX_BLOCKS_PER_MINE = 1000

type Kind = 'read' | 'mine' | 'clock' | 'refused'

/**
 * Calls that may mine a block: each block they mine is journaled before they answer, and so is a transaction they
 * leave pending (mining off). `evm_setAutomine` mines nothing itself, but it runs alone like the others, so that
 * nothing is sent while mining is being switched, and whatever it might mine would be journaled. The switch itself
 * is not journaled: a restarted chain automines again.
 */
const MINING = new Set(['eth_sendRawTransaction', 'eth_sendTransaction', 'evm_mine', 'hardhat_mine', 'evm_setAutomine'])
/**
 * Calls that only move the clock for future blocks: harmless to replay, because the journal records the
 * timestamp each block was actually mined with.
 */
const CLOCK = new Set(['evm_increaseTime', 'evm_setNextBlockTimestamp'])
const READ_EXTRA = new Set(['hardhat_metadata', 'hardhat_getAutomine', 'hardhat_getStackTraceFailuresCount'])
const SENDS = new Set(['eth_sendRawTransaction', 'eth_sendTransaction'])

function classify(method: string): Kind {
  if (MINING.has(method)) return 'mine'
  if (CLOCK.has(method)) return 'clock'
  if (READ_EXTRA.has(method)) return 'read'
  // Everything else that is `hardhat_*`/`evm_*` rewrites state or history outside a transaction (snapshots,
  // reverts, resets, balance/code/storage/nonce edits, impersonation, dropping a pending transaction) or mines
  // outside any request (interval mining): it cannot be replayed.
  if (/^(eth|net|web3)_/.test(method) || method.startsWith('debug_trace') || method === 'personal_sign') return 'read'
  return 'refused'
}

/**
 * The Hardhat provider as Parley's chain serves it: every block it mines is appended to the journal and
 * fsynced before the request that mined it is answered, and before anyone can read it (see ReadWriteGate); so
 * is every transaction it accepts without mining it (mining off, or a nonce gap), as a pending record. Calls
 * that would make the history unreplayable are refused with a JSON-RPC error.
 *
 * Mining controls: `evm_setAutomine [bool]` (off: sent transactions wait in the mempool), `evm_mine [timestamp?]`
 * (one block with every pending transaction that fits), `hardhat_mine [n?, interval?]` (n blocks, the first with
 * the pending transactions; mined here as n × evm_mine, see mineBlocks), `hardhat_getAutomine`.
 */
export class JournaledProvider extends EventEmitter implements EIP1193Provider {
  private readonly gate = new ReadWriteGate()
  /** Subscription notifications raised while a block was being mined, released once it is durable. */
  private held: Array<[string, unknown]> = []
  private broken: string | undefined
  /** Transactions journaled as pending and not mined yet, by hash: their exact bytes, journaled once. */
  private readonly pending = new Map<string, string>()

  constructor(
    private readonly inner: EIP1193Provider,
    private readonly journal: ChainJournal,
    /** Called when a mined block could not be journaled: the process must stop rather than serve it. */
    private readonly onFatal: (err: Error) => void,
    /** Raw transactions the journal already holds as pending and no journaled block holds. */
    journaledPending: readonly string[] = [],
  ) {
    super()
    for (const raw of journaledPending) this.pending.set(keccak256(raw), raw.toLowerCase())
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
        return this.gate.write(() =>
          this.mineAndJournal(args, args.method === 'hardhat_mine' ? () => this.mineBlocks(args) : () => this.inner.request(args)),
        )
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

  private async mineAndJournal(args: RequestArguments, run: () => Promise<unknown>): Promise<unknown> {
    const before = await this.blockNumber()
    let result: unknown
    let failure: unknown
    let failed = false
    try {
      result = await run()
    } catch (err) {
      // A reverted transaction is still mined (Hardhat answers with an error): it is journaled all the same.
      failure = err
      failed = true
    }
    try {
      const after = await this.blockNumber()
      const knownRaw = args.method === 'eth_sendRawTransaction' ? firstParam(args) : undefined
      // The answer to a send is the transaction's hash: hashing kilobytes of calldata again is only needed when it failed.
      const known =
        knownRaw === undefined ? undefined : { raw: knownRaw, hash: !failed && typeof result === 'string' ? result.toLowerCase() : hashOfRaw(knownRaw) }
      const records: JournalRecord[] = []
      const mined = new Set<string>()
      for (let n = before + 1; n <= after; n++) {
        const { block, hashes } = await this.describeBlock(n, known)
        for (const hash of hashes) mined.add(hash)
        records.push(block)
      }
      // An accepted transaction that no block holds waits in the mempool: the client has its hash, so it must
      // survive a crash too. (A failed send accepted nothing: a duplicate is already journaled, a reverted one mined.)
      if (!failed && SENDS.has(args.method) && typeof result === 'string') {
        const hash = result.toLowerCase()
        if (!mined.has(hash) && !this.pending.has(hash)) {
          const raw = knownRaw ?? (await this.rawOfPending(hash))
          records.push({ pending: raw })
          this.pending.set(hash, raw)
        }
      }
      this.journal.append(records)
      for (const hash of mined) this.pending.delete(hash)
    } catch (err) {
      this.broken = `a mined block or accepted transaction could not be journaled: ${errorMessage(err)}`
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

  /**
   * `hardhat_mine [n = 1, interval = 1]` as n × `evm_mine`: the first block as `evm_mine` stamps it (the clock, or
   * one second after its parent, or what `evm_setNextBlockTimestamp` set), each next one `interval` seconds (at
   * least 1) after the previous. Hardhat's own hardhat_mine leaves all but its first block to be built when first
   * read, and stamps the blocks mined after them from the last block it built itself: with interval 0 (or after
   * `evm_setNextBlockTimestamp`) they come out earlier than their parent, which `evm_mine` refuses to mine again
   * in a replay, and its lazily built blocks do not replay with their hashes.
   */
  private async mineBlocks(args: RequestArguments): Promise<true> {
    const params = Array.isArray(args.params) ? (args.params as unknown[]) : []
    const n = quantityParam(params[0], 1, 'the number of blocks')
    const interval = Math.max(1, quantityParam(params[1], 1, 'the interval'))
    if (n > MAX_BLOCKS_PER_MINE) {
      throw new ChainRpcError(`hardhat_mine mines at most ${MAX_BLOCKS_PER_MINE} blocks per call on this chain (each block is journaled and replayed)`, INVALID_PARAMS)
    }
    let previous: number | undefined
    for (let i = 0; i < n; i++) {
      await this.inner.request({ method: 'evm_mine', params: previous === undefined ? [] : [previous + interval] })
      const block = (await this.inner.request({ method: 'eth_getBlockByNumber', params: ['latest', false] })) as { timestamp: string }
      previous = Number(block.timestamp)
    }
    return true
  }

  /** The exact bytes of a transaction the node signed itself (eth_sendTransaction) that waits in the mempool. */
  private async rawOfPending(hash: string): Promise<string> {
    const tx = (await this.inner.request({ method: 'eth_getTransactionByHash', params: [hash] })) as RpcTransaction | null
    if (tx === null) throw new Error(`transaction ${hash} was accepted but the chain does not know it`)
    return rawFromMinedTransaction(tx)
  }

  /**
   * A mined block as the journal holds it, and its transactions' hashes. The block is read with hashes only: the bytes
   * of a transaction sent raw are already here, and only one the chain signed itself is read whole, to be rebuilt.
   */
  private async describeBlock(n: number, known: { raw: string; hash: string } | undefined): Promise<{ block: JournalBlock; hashes: string[] }> {
    const block = (await this.inner.request({ method: 'eth_getBlockByNumber', params: [toQuantity(n), false] })) as {
      hash: string
      timestamp: string
      transactions: string[]
    }
    const hashes = block.transactions.map((h) => h.toLowerCase())
    const txs: string[] = []
    for (const hash of hashes) {
      if (hash === known?.hash) txs.push(known.raw)
      else txs.push(this.pending.get(hash) ?? (await this.rawOfMined(hash)))
    }
    return { block: { n, t: Number(block.timestamp), h: block.hash, txs }, hashes }
  }

  private async rawOfMined(hash: string): Promise<string> {
    const tx = (await this.inner.request({ method: 'eth_getTransactionByHash', params: [hash] })) as RpcTransaction | null
    if (tx === null) throw new Error(`transaction ${hash} is in a mined block but the chain does not know it`)
    return rawFromMinedTransaction(tx)
  }

  private async blockNumber(): Promise<number> {
    return Number(await this.inner.request({ method: 'eth_blockNumber' }))
  }
}

function hashOfRaw(raw: string): string {
  return keccak256(Buffer.from(raw.slice(2), 'hex'))
}

function firstParam(args: RequestArguments): string | undefined {
  const p = Array.isArray(args.params) ? (args.params as unknown[])[0] : undefined
  return typeof p === 'string' ? p.toLowerCase() : undefined
}

/** A JSON-RPC quantity parameter ("0x10", or a plain non-negative integer), `fallback` when absent. */
function quantityParam(value: unknown, fallback: number, what: string): number {
  if (value === undefined || value === null) return fallback
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^0x[0-9a-f]+$/i.test(value) ? Number(value) : NaN
  if (!Number.isSafeInteger(n) || n < 0) throw new ChainRpcError(`hardhat_mine: ${what} must be a quantity such as "0x2", not ${JSON.stringify(value)}`, INVALID_PARAMS)
  return n
}

export function toQuantity(n: number): string {
  return '0x' + n.toString(16)
}
