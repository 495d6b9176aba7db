import { WebSocketServer, type WebSocket } from 'ws'
import { bodyOf, ScriptedServer } from './scripted-server.js'

/** How the endpoint answers a JSON-RPC call: a result, or a JSON-RPC error. */
export type ChainAnswer = { result: unknown } | { error: { code: number; message: string } }

/**
 * An Ethereum JSON-RPC endpoint on loopback whose answers the test scripts: HTTP calls through `answer`, and
 * `eth_subscribe("newHeads")` over a WebSocket at the same address (as `hardhat node` serves them), refused unless
 * `subscriptions` is on. `announce` sends a new head to every subscriber. For unit tests of the chain seam, whose
 * behaviour towards a chain that answers wrongly cannot be had from a real one.
 */
export class ScriptedChain {
  readonly calls: string[] = []
  answer: (method: string, params: unknown[]) => ChainAnswer = (method) => ({ error: { code: -32601, message: `${method} not scripted` } })
  subscriptions = false
  /** The result a subscription is answered with (a string id, as a chain answers; anything else to test a bad answer). */
  subscriptionId: unknown = '0xfeed'
  private http: ScriptedServer | undefined
  private wss: WebSocketServer | undefined
  private readonly subscribers = new Set<WebSocket>()

  async start(): Promise<string> {
    this.http = await ScriptedServer.start()
    this.http.handler = (req, res) => {
      void bodyOf(req).then((bytes) => {
        const call = JSON.parse(bytes.toString('utf8')) as { id: number; method: string; params: unknown[] }
        this.calls.push(call.method)
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, ...this.answer(call.method, call.params) }))
      })
    }
    this.wss = new WebSocketServer({ server: this.http.server })
    this.wss.on('connection', (ws) => {
      ws.on('message', (data) => {
        const call = JSON.parse(String(data)) as { id: number; method: string }
        if (call.method !== 'eth_subscribe') return
        if (!this.subscriptions) return void ws.send(JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code: -32601, message: 'subscriptions are off' } }))
        this.subscribers.add(ws)
        ws.on('close', () => this.subscribers.delete(ws))
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: call.id, result: this.subscriptionId }))
      })
    })
    return this.http.url
  }

  /** Sends a `newHeads` notification of block `number` to every subscriber; answers how many got it. */
  announce(number: number, baseFee?: bigint): number {
    const result = { number: '0x' + number.toString(16), ...(baseFee === undefined ? {} : { baseFeePerGas: '0x' + baseFee.toString(16) }) }
    for (const ws of this.subscribers) ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription: '0xfeed', result } }))
    return this.subscribers.size
  }

  /** Sends `text` as it is to every subscriber (a malformed notification). */
  sendRaw(text: string): void {
    for (const ws of this.subscribers) ws.send(text)
  }

  /** Drops every subscriber's connection, as a chain restarting does. */
  dropSubscribers(): void {
    for (const ws of this.subscribers) ws.terminate()
  }

  get subscriberCount(): number {
    return this.subscribers.size
  }

  async stop(): Promise<void> {
    // Upgraded sockets are the WebSocket server's, not the HTTP server's to close.
    for (const ws of this.wss?.clients ?? []) ws.terminate()
    this.wss?.close()
    await this.http?.stop()
  }
}
