import { Backoff } from '../core/backoff.js'
import WebSocket from 'ws'

/** The WebSocket address of a JSON-RPC endpoint: same host, port and path (as `hardhat node` and geth serve). */
export function wsUrlOf(rpc: string): string {
  const u = new URL(rpc)
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:'
  return u.toString()
}

/** A block announced by `newHeads`. */
export interface Head {
  number: number
  baseFee: bigint | undefined
}

const QUANTITY = /^0x[0-9a-fA-F]{1,64}$/
/**
 * A member usually starts while its chain does (the network starts both at once): the first subscription that works
 * is what tells the member the chain is there, so how late it comes after the chain opens its port is on the path of
 * every network's start. Short waits first (a refused connection on loopback costs next to nothing), at most a second.
 */
const MIN_RETRY_MS = 100
const MAX_RETRY_MS = 1000

/**
 * New-block notifications through `eth_subscribe("newHeads")`, so the follower wakes when a block is mined
 * instead of polling. Reconnects with backoff whenever the socket drops (a chain restart, for instance).
 */
export class HeadWatcher {
  private ws: WebSocket | undefined
  private timer: NodeJS.Timeout | undefined
  private readonly backoff = new Backoff(MIN_RETRY_MS, MAX_RETRY_MS)
  private stopped = true
  /** Failed connection attempts since the last subscription that worked. */
  failures = 0
  lastError: string | undefined

  constructor(
    readonly url: string,
    /** A new block: its number and, on an EIP-1559 chain, its base fee (what the next transaction is priced from). */
    private readonly onHead: (head: Head) => void,
    /**
     * A subscription was made, or a working one dropped: the chain has just come back or gone away, so the
     * follower should look now rather than at its next poll.
     */
    private readonly onChange: () => void,
  ) {}

  get subscribed(): boolean {
    return this.failures === 0 && this.lastError === undefined && this.ws?.readyState === WebSocket.OPEN
  }

  start(): void {
    if (!this.stopped) return
    this.stopped = false
    this.connect()
  }

  /** Reconnects now rather than after the backoff: the HTTP side just came back, the socket probably can too. */
  kick(): void {
    if (this.stopped || this.ws !== undefined) return
    clearTimeout(this.timer)
    this.connect()
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
    this.ws?.terminate()
    this.ws = undefined
  }

  private connect(): void {
    this.timer = undefined
    const ws = new WebSocket(this.url)
    this.ws = ws
    let subscribed = false
    ws.on('open', () => {
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }))
    })
    ws.on('message', (data) => {
      let msg: { id?: number; result?: unknown; error?: { message?: string }; method?: string; params?: { result?: { number?: unknown; baseFeePerGas?: unknown } } }
      try {
        msg = JSON.parse(String(data)) as typeof msg
      } catch {
        return
      }
      if (msg.id === 1) {
        if (msg.error !== undefined || typeof msg.result !== 'string') {
          this.lastError = `eth_subscribe refused: ${msg.error?.message ?? 'no subscription id'}`
          ws.close()
          return
        }
        subscribed = true
        this.failures = 0
        this.lastError = undefined
        this.backoff.reset()
        this.onChange()
        return
      }
      const header = msg.method === 'eth_subscription' ? msg.params?.result : undefined
      const number = header?.number
      if (typeof number !== 'string' || !QUANTITY.test(number)) return
      const baseFee = header?.baseFeePerGas
      this.onHead({ number: Number(number), baseFee: typeof baseFee === 'string' && QUANTITY.test(baseFee) ? BigInt(baseFee) : undefined })
    })
    ws.on('error', (err: NodeJS.ErrnoException) => {
      this.lastError = err.code ?? err.message
    })
    ws.on('close', () => {
      if (this.ws === ws) this.ws = undefined
      if (this.stopped) return
      if (subscribed) this.lastError ??= 'connection closed'
      this.failures++
      // Only a working subscription that dropped is news; failed reconnects are the same news again.
      if (subscribed) this.onChange()
      this.timer = setTimeout(() => this.connect(), this.backoff.next())
    })
  }
}
