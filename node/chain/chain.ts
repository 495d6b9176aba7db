import { errorMessage, ParleyError } from '../core/errors.js'
import { Backoff } from '../core/backoff.js'
import { decodeNetworkVersion, encodeNetworkVersionCall } from './abi.js'
import { ConsumerError, LogFollower } from './follower.js'
import { HeadWatcher, wsUrlOf, type Head } from './heads.js'
import { ProblemLog } from './problems.js'
import { JsonRpcClient, RpcError } from './rpc.js'
import { PinSubmitter } from './submitter.js'
import type { Chain, ChainOptions, ChainStatus, PinBatchRequest, PinSubmission } from './types.js'
import { failedSubmission } from './pin-submission.js'
import { keySigner } from './key-address.js'

const REQUIRED_NETWORK_VERSION = 2
const MIN_BACKOFF_MS = 250
const MAX_BACKOFF_MS = 5000
/** Failed WebSocket reconnects before the fallback to polling is worth a log line. */
const WS_FAILURES_BEFORE_LOG = 3

const abandoned = (): ParleyError => new ParleyError('UNAVAILABLE', 'the pinBatch submission was abandoned (its sender is stopping)')

/** The endpoint answers, but what is at the contract address is not a BatchPin V2 contract (yet). */
class ContractProblem extends Error {}

/** Connects a member node to the chain over Ethereum JSON-RPC (HTTP for calls, WebSocket for new blocks). */
export function createChain(opts: ChainOptions): Chain {
  return new EthereumChain(opts)
}

class EthereumChain implements Chain {
  private readonly rpc: JsonRpcClient
  private readonly contract: string
  private readonly problems: ProblemLog
  private readonly follower: LogFollower
  private readonly heads: HeadWatcher
  private readonly submitter: PinSubmitter
  private readonly pollMs: number
  private verified: { chainId: bigint; networkVersion: number } | undefined
  private lastError: string | undefined
  private head: Head | undefined
  /** The newest block announced since the loop last looked: the follower reads up to it without asking for the head. */
  private announced: number | undefined
  private started = false
  private stopped = false
  private loop: Promise<void> | undefined
  /** Set by a wake-up that arrives while the loop is busy, so the loop goes round again instead of sleeping. */
  private wakePending = false
  private wakeLoop: (() => void) | undefined
  /** Waiters for the next block, for verification, or for stop. */
  private readonly headWaiters = new Set<() => void>()
  private readonly readyWaiters = new Set<{ resolve: (chainId: bigint) => void; reject: (err: Error) => void }>()
  /** Aborted by stop(): ends a wait at a held read gate. */
  private readonly stopping = new AbortController()

  constructor(private readonly opts: ChainOptions) {
    this.rpc = new JsonRpcClient(opts.rpc)
    this.contract = opts.contract.toLowerCase()
    this.problems = new ProblemLog(opts.log)
    this.pollMs = opts.pollIntervalMs ?? 5000
    this.follower = new LogFollower(this.rpc, this.contract, opts.fromBlock, opts.chunkSize ?? 2000, opts.onEvents, opts.log)
    this.heads = new HeadWatcher(wsUrlOf(opts.rpc), (h) => this.onHead(h), () => this.wake())
    this.submitter = new PinSubmitter({
      rpc: this.rpc,
      wallet: keySigner(opts.privateKey),
      contract: this.contract,
      problems: this.problems,
      ready: (signal) => this.ready(signal),
      nextHead: (ms, signal) => this.nextHead(ms, signal),
      stopped: () => this.stopped,
      head: () => this.head,
    })
  }

  start(): void {
    if (this.started) return
    this.started = true
    this.heads.start()
    this.loop = this.run()
  }

  submitPinBatch(req: PinBatchRequest, signal?: AbortSignal): PinSubmission {
    if (this.stopped) return failedSubmission(new ParleyError('UNAVAILABLE', 'the chain connection was stopped'))
    return this.submitter.submit(req, signal)
  }

  status(): ChainStatus {
    const head = Math.max(this.head?.number ?? -1, this.follower.head ?? -1)
    return {
      connected: this.verified !== undefined,
      rpc: this.opts.rpc,
      contract: this.contract,
      networkVersion: this.verified?.networkVersion,
      headBlock: head >= 0 ? head : undefined,
      lastProcessedBlock: this.follower.cursor - 1,
      error: this.lastError,
    }
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.stopping.abort()
    this.heads.stop()
    this.wake()
    for (const w of this.readyWaiters) w.reject(new ParleyError('UNAVAILABLE', 'the chain connection was stopped'))
    this.readyWaiters.clear()
    for (const w of this.headWaiters) w()
    // The loop finishes the onEvents call in flight, so the node never sees a half-handled range.
    await this.loop
    this.rpc.close()
  }

  /** Follows the chain: verify, catch up, sleep until a new block (or the fallback poll), again. */
  private async run(): Promise<void> {
    const backoff = new Backoff(MIN_BACKOFF_MS, MAX_BACKOFF_MS)
    while (!this.stopped) {
      this.wakePending = false
      try {
        if (this.verified === undefined) await this.verify()
        const gate = this.opts.readGate
        if (gate?.held) {
          // Held: no log is read until the release, which wakes this wait; then the follower goes on from its cursor.
          await gate.whenOpen(this.stopping.signal)
          continue
        }
        const announced = this.announced
        this.announced = undefined
        await this.follower.catchUp(() => this.stopped || gate?.held === true, announced)
        this.reportBehind()
        this.lastError = undefined
        this.problems.clear('follow', 'chain: storing events works again')
        this.reportNotifications()
        backoff.reset()
        // A hold that came during the catch-up parks at the gate above, whose release wakes it at once.
        if (gate?.held) continue
        await this.sleep(this.pollMs)
      } catch (err) {
        this.lastError = this.describe(err)
        const topic = err instanceof ConsumerError ? 'follow' : 'connect'
        // However the connection fails (refused, reset, timed out), it is one outage and one line; so is one
        // problem storing events, whatever blocks it holds up.
        const reason = err instanceof RpcError && err.transport ? 'unreachable' : err instanceof ConsumerError ? err.reason : this.lastError
        this.problems.report(topic, `chain: ${this.lastError}`, reason)
        await this.sleep(backoff.next())
      }
    }
  }

  private describe(err: unknown): string {
    if (err instanceof RpcError && err.transport) {
      // Whatever answers when the endpoint is back may be another chain: verify again before trusting it.
      this.verified = undefined
      return err.message
    }
    if (err instanceof ContractProblem) return err.message
    if (err instanceof ConsumerError) return `${err.message}; retrying`
    return `following ${this.contract} on ${this.opts.rpc} failed: ${errorMessage(err)}; retrying`
  }

  private async verify(): Promise<void> {
    const chainId = BigInt(await this.rpc.call<string>('eth_chainId'))
    const where = `${this.contract} on ${this.opts.rpc}`
    if (!/^0x[0-9a-f]{40}$/.test(this.contract)) throw new ContractProblem(`contract address ${this.opts.contract} is not an Ethereum address`)
    const code = await this.rpc.call<string>('eth_getCode', [this.contract, 'latest'])
    if (/^0x0*$/.test(code)) throw new ContractProblem(`no contract at ${where}`)
    let version: number
    try {
      version = decodeNetworkVersion(await this.rpc.call<string>('eth_call', [{ to: this.contract, data: encodeNetworkVersionCall() }, 'latest']))
    } catch (err) {
      if (err instanceof RpcError && err.transport) throw err
      throw new ContractProblem(`the contract at ${where} has no networkVersion(): not a FireFly BatchPin contract`)
    }
    if (version !== REQUIRED_NETWORK_VERSION) {
      throw new ContractProblem(`the contract at ${where} has networkVersion() ${version}; Parley needs ${REQUIRED_NETWORK_VERSION}`)
    }
    this.verified = { chainId, networkVersion: version }
    this.problems.clear('connect')
    this.opts.log(`chain: following ${where} (chain id ${chainId}, networkVersion ${version}) from block ${this.follower.cursor}`)
    this.heads.kick()
    for (const w of this.readyWaiters) w.resolve(chainId)
    this.readyWaiters.clear()
  }

  /** A head below the stored cursor is normal for a moment, but a chain that was reset will stay there. */
  private reportBehind(): void {
    const head = this.follower.head
    if (head !== undefined && head < this.follower.cursor - 1) {
      this.problems.report('behind', `chain: the head block ${head} on ${this.opts.rpc} is behind the stored cursor ${this.follower.cursor}; waiting for the chain to reach it (was the chain reset?)`, 'behind')
    } else {
      this.problems.clear('behind', `chain: the chain has reached block ${this.follower.cursor - 1} again`)
    }
  }

  /** Notifications are a speed-up, not a dependency: say so once when they are missing, and keep polling. */
  private reportNotifications(): void {
    if (this.heads.subscribed) {
      this.problems.clear('ws', `chain: new-block notifications from ${this.heads.url} are back`)
    } else if (this.heads.failures >= WS_FAILURES_BEFORE_LOG) {
      this.problems.report('ws', `chain: no new-block notifications from ${this.heads.url} (${this.heads.lastError ?? 'not subscribed'}); checking every ${this.pollMs} ms instead`)
    }
  }

  private ready(signal?: AbortSignal): Promise<bigint> {
    if (this.stopped) return Promise.reject(new ParleyError('UNAVAILABLE', 'the chain connection was stopped'))
    if (signal?.aborted) return Promise.reject(abandoned())
    if (this.verified !== undefined) return Promise.resolve(this.verified.chainId)
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: (id: bigint) => {
          signal?.removeEventListener('abort', onAbort)
          resolve(id)
        },
        reject: (err: Error) => {
          signal?.removeEventListener('abort', onAbort)
          reject(err)
        },
      }
      const onAbort = (): void => {
        this.readyWaiters.delete(waiter)
        reject(abandoned())
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.readyWaiters.add(waiter)
    })
  }

  private onHead(head: Head): void {
    this.head = head
    this.announced = Math.max(this.announced ?? -1, head.number)
    this.wake()
    for (const w of this.headWaiters) w()
  }

  private nextHead(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.stopped || signal?.aborted) return Promise.resolve()
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        this.headWaiters.delete(done)
        signal?.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.headWaiters.add(done)
      signal?.addEventListener('abort', done, { once: true })
    })
  }

  private wake(): void {
    this.wakePending = true
    this.wakeLoop?.()
  }

  private sleep(ms: number): Promise<void> {
    if (this.wakePending || this.stopped) return Promise.resolve()
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        this.wakeLoop = undefined
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.wakeLoop = done
    })
  }
}
