import http from 'node:http'
import https from 'node:https'

/**
 * Ethereum JSON-RPC over HTTP, one request per call. Deliberately not ethers' JsonRpcProvider: that one caches
 * identical calls (stale nonces and heads), batches with a stall, and, when the endpoint is down at start,
 * prints its own retry message every second. A follower needs fresh answers and failures it can classify.
 */

/** Why a call failed: the endpoint could not be reached (`transport`) or it answered with an error. */
export class RpcError extends Error {
  constructor(
    message: string,
    readonly transport: boolean,
    readonly code?: number,
    readonly data?: unknown,
  ) {
    super(message)
    this.name = 'RpcError'
  }
}

interface JsonRpcReply {
  result?: unknown
  error?: { code?: number; message?: string; data?: unknown }
}

/** The low-level reason of a failed request (ECONNREFUSED, ENOTFOUND, ...), or that it timed out. */
function transportReason(err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  if (err.name === 'TimeoutError') return 'timed out'
  const code = (err as NodeJS.ErrnoException).code
  if (typeof code === 'string') return code
  // A connection refused on every address of a name comes as an AggregateError of them.
  const inner = (err as Error & { errors?: unknown[] }).errors?.[0]
  if (inner instanceof Error && typeof (inner as NodeJS.ErrnoException).code === 'string') return (inner as NodeJS.ErrnoException).code as string
  return err.message
}

/**
 * A JSON-RPC client over node:http with kept-alive connections. fetch (undici) cost about as much CPU per call as the
 * chain's answer was worth, and a node makes several calls per block; a plain request on a reused socket is far cheaper.
 */
export class JsonRpcClient {
  private nextId = 1
  private readonly target: URL
  private readonly agent: http.Agent
  private readonly send: typeof http.request

  constructor(
    readonly url: string,
    private readonly timeoutMs = 30_000,
  ) {
    this.target = new URL(url)
    const secure = this.target.protocol === 'https:'
    this.agent = secure ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true })
    this.send = secure ? https.request : http.request
  }

  async call<T>(method: string, params: unknown[] = []): Promise<T> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params })
    let answer: { status: number; text: string }
    try {
      answer = await this.post(body, false)
    } catch (err) {
      throw new RpcError(`cannot reach ${this.url}: ${transportReason(err)}`, true)
    }
    let reply: JsonRpcReply
    try {
      reply = JSON.parse(answer.text) as JsonRpcReply
    } catch (err) {
      throw new RpcError(`${this.url} answered HTTP ${answer.status} without JSON-RPC: ${transportReason(err)}`, true)
    }
    if (reply === null || typeof reply !== 'object') throw new RpcError(`${this.url} answered HTTP ${answer.status} without JSON-RPC`, true)
    if (reply.error !== undefined) {
      throw new RpcError(reply.error.message ?? `${method} failed`, false, reply.error.code, reply.error.data)
    }
    if (!('result' in reply)) throw new RpcError(`${this.url} answered HTTP ${answer.status} without a result`, true)
    return reply.result as T
  }

  /** Closes the kept-alive connections (they do not hold the process open meanwhile: the agent unrefs them). */
  close(): void {
    this.agent.destroy()
  }

  private post(body: string, retried: boolean): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      let settled = false
      const fail = (err: Error): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        // A kept-alive socket the server closed just as we reused it: nothing reached the server, so asking again
        // on a fresh connection is safe (Node's documented remedy for this race).
        if (!retried && req.reusedSocket && (err as NodeJS.ErrnoException).code === 'ECONNRESET') resolve(this.post(body, true))
        else reject(err)
      }
      const req = this.send(
        this.target,
        { method: 'POST', agent: this.agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('error', fail)
          res.on('close', () => {
            if (!res.complete) return fail(Object.assign(new Error('the connection closed mid-answer'), { code: 'ECONNRESET' }))
            if (settled) return
            settled = true
            clearTimeout(timer)
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') })
          })
        },
      )
      const timer = setTimeout(() => req.destroy(Object.assign(new Error('timed out'), { name: 'TimeoutError' })), this.timeoutMs)
      req.on('error', fail)
      req.end(body)
    })
  }
}

export function toQuantity(n: number | bigint): string {
  return '0x' + n.toString(16)
}
