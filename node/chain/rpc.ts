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

/** The low-level reason of a failed fetch (ECONNREFUSED, ENOTFOUND, ...) rather than undici's "fetch failed". */
function transportReason(err: unknown): string {
  if (err instanceof Error) {
    if (err.name === 'TimeoutError' || err.name === 'AbortError') return 'timed out'
    const cause = (err as Error & { cause?: unknown }).cause
    if (cause instanceof Error) {
      const code = (cause as NodeJS.ErrnoException).code
      if (typeof code === 'string') return code
      const inner = (cause as Error & { errors?: unknown[] }).errors?.[0]
      if (inner instanceof Error && typeof (inner as NodeJS.ErrnoException).code === 'string') {
        return (inner as NodeJS.ErrnoException).code as string
      }
      return cause.message
    }
    return err.message
  }
  return String(err)
}

export class JsonRpcClient {
  private nextId = 1

  constructor(
    readonly url: string,
    private readonly timeoutMs = 30_000,
  ) {}

  async call<T>(method: string, params: unknown[] = []): Promise<T> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params })
    let res: Response
    try {
      res = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(this.timeoutMs),
      })
    } catch (err) {
      throw new RpcError(`cannot reach ${this.url}: ${transportReason(err)}`, true)
    }
    let reply: JsonRpcReply
    try {
      reply = (await res.json()) as JsonRpcReply
    } catch (err) {
      throw new RpcError(`${this.url} answered HTTP ${res.status} without JSON-RPC: ${transportReason(err)}`, true)
    }
    if (reply.error !== undefined) {
      throw new RpcError(reply.error.message ?? `${method} failed`, false, reply.error.code, reply.error.data)
    }
    if (!('result' in reply)) throw new RpcError(`${this.url} answered HTTP ${res.status} without a result`, true)
    return reply.result as T
  }
}

export function toQuantity(n: number | bigint): string {
  return '0x' + n.toString(16)
}
