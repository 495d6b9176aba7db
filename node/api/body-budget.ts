import type { Context, Next } from 'koa'
import { ParleyError } from '../core/errors.js'
import { addCount } from '../core/counts.js'
import { DEFAULT_REQUEST_LIMITS, type RequestLimits } from '../core/limits.js'

/** How much of a body must arrive for it to count as progressing (see BodyBudget.take). */
const PROGRESS_BYTES = 64 * 1024

/**
 * The memory this member gives to request bodies being read, over every connection at once, and the share of it one
 * client address may hold. Bytes are taken as they arrive, not from a declared length: a client that declares a
 * large body and sends it a byte at a time holds the bytes it sent, not the ones it promised. A body holds its share
 * from its first byte until its response has gone, so a crowd of clients that each send part of a large body and stop
 * cannot make the node hold more than the budget, whatever their number, and one address no more than its share.
 * One connection holds at most one body at a time, as its requests are served in turn (node/core/pipelining.ts).
 */
export class BodyBudget {
  private heldBytes = 0
  private readonly byAddress = new Map<string, number>()
  /** Bodies still arriving, in the order they last made progress (oldest first: Set order, refreshed on progress). */
  private readonly reading = new Set<BodyReader>()

  constructor(
    readonly limitBytes: number,
    readonly addressLimitBytes: number,
    /** limits.bodyStalledMs: how long a body must have sent nothing to give up its share to one that is arriving. */
    readonly stalledMs = Number.POSITIVE_INFINITY,
    private readonly now: () => number = Date.now,
  ) {}

  get held(): number {
    return this.heldBytes
  }

  heldBy(address: string): number {
    return this.byAddress.get(address) ?? 0
  }

  /**
   * Takes `bytes` for a body from `address`, or answers the refusal (and takes nothing) if that would pass a limit.
   * Refused, it first evicts stalled bodies (`reader` itself excepted: less than PROGRESS_BYTES in `stalledMs`) that
   * hold what it needs: a client whose bodies stopped arriving, or trickle, cannot keep out one whose body is arriving,
   * and on loopback every client is the same address.
   */
  take(address: string, bytes: number, reader?: BodyReader): ParleyError | undefined {
    if (reader && this.reading.has(reader)) {
      // Progress is counted in steps of PROGRESS_BYTES: a byte now and then keeps no body from counting as stalled.
      reader.sinceProgress = (reader.sinceProgress ?? 0) + bytes
      if (reader.sinceProgress >= PROGRESS_BYTES) {
        reader.sinceProgress = 0
        this.reading.delete(reader)
        this.reading.add(reader)
        reader.lastChunkAt = this.now()
      }
    }
    const refused = this.refusal(address, bytes)
    if (!refused) return this.hold(address, bytes)
    this.evictStalled(refused.scope, address, bytes, reader)
    const still = this.refusal(address, bytes)
    return still ? still.error : this.hold(address, bytes)
  }

  /** A body starts arriving: it may be evicted while it stalls (see take). `evict` must give its share back at once. */
  startReading(reader: BodyReader): void {
    reader.lastChunkAt = this.now()
    this.reading.add(reader)
  }

  /** The body is whole (or abandoned): it is no longer evictable, and holds its share until its handler is done. */
  stopReading(reader: BodyReader): void {
    this.reading.delete(reader)
  }

  private hold(address: string, bytes: number): undefined {
    this.heldBytes += bytes
    addCount(this.byAddress, address, bytes)
    return undefined
  }

  private evictStalled(scope: 'address' | 'total', address: string, bytes: number, self: BodyReader | undefined): void {
    const before = this.now() - this.stalledMs
    for (const r of [...this.reading]) {
      if (r.lastChunkAt > before) break
      if (r === self || (scope === 'address' && r.address !== address)) continue
      this.reading.delete(r)
      r.evict(new ParleyError('REQUEST_TIMEOUT', `the request body sent less than ${PROGRESS_BYTES} bytes in ${this.stalledMs} ms while other bodies needed the budget it held (limits.bodyStalledMs)`))
      if (!this.refusal(address, bytes)) return
    }
  }

  private refusal(address: string, bytes: number): { scope: 'address' | 'total'; error: ParleyError } | undefined {
    const own = this.heldBy(address)
    if (own + bytes > this.addressLimitBytes) {
      return { scope: 'address', error: new ParleyError('TOO_MANY_REQUESTS', `requests from ${address} already hold ${own} bytes of request bodies being read here; at most ${this.addressLimitBytes} from one address (limits.addressBodyBytes): try again shortly`) }
    }
    if (this.heldBytes + bytes > this.limitBytes) {
      return { scope: 'total', error: new ParleyError('TOO_MANY_REQUESTS', `this member is already reading ${this.heldBytes} bytes of request bodies; at most ${this.limitBytes} at once (limits.inFlightBodyBytes): try again shortly`) }
    }
    return undefined
  }

  give(address: string, bytes: number): void {
    this.heldBytes = Math.max(0, this.heldBytes - bytes)
    addCount(this.byAddress, address, -bytes)
  }
}

/** A body being read, as the budget sees it: whose, when its last chunk came, and how to abandon it. */
export interface BodyReader {
  readonly address: string
  /** When it last made progress: PROGRESS_BYTES more since the time before. */
  lastChunkAt: number
  sinceProgress?: number
  /** Gives the body's share back at once and ends its read with `err`. */
  evict(err: ParleyError): void
}

/** What a route reading a body needs from the server it runs in; `take` charges this request's share. */
export interface BodyContext {
  limits: RequestLimits
  budget: BodyBudget
  /** Takes `bytes` more for this request, given back once its handler is done; the refusal when over a budget. */
  take(bytes: number): ParleyError | undefined
  /**
   * The body is being read: until `done` is called, a stall of `limits.bodyStalledMs` lets a body that needs the
   * budget evict it, which gives its share back and calls `abort` (the read must then end with that error).
   */
  reading(abort: (err: ParleyError) => void): { done(): void }
}

const BODY_CONTEXT = Symbol('parley.body')

/**
 * Gives every request of this server its limits and the shared budget (read back with bodyContext). A request's share
 * is given back when its handler is done, not when its connection closes: a client that hangs up right after its last
 * byte leaves the handler holding the body (parsed, queued for a check) for as long as the handler runs.
 */
export function bodyContextMiddleware(limits: RequestLimits, budget: BodyBudget) {
  return async (ctx: Context, next: Next): Promise<void> => {
    let held = 0
    const address = clientAddress(ctx)
    let reader: BodyReader | undefined
    const body: BodyContext = {
      limits,
      budget,
      take(bytes) {
        const refused = budget.take(address, bytes, reader)
        if (!refused) held += bytes
        return refused
      },
      reading(abort) {
        const r: BodyReader = {
          address,
          lastChunkAt: 0,
          evict(err) {
            budget.give(address, held)
            held = 0
            reader = undefined
            abort(err)
          },
        }
        reader = r
        budget.startReading(r)
        return {
          done() {
            budget.stopReading(r)
            if (reader === r) reader = undefined
          },
        }
      },
    }
    ;(ctx.state as Record<symbol, BodyContext>)[BODY_CONTEXT] = body
    try {
      await next()
    } finally {
      budget.give(address, held)
    }
  }
}

/** The server's body context; outside a server (unit tests) the defaults and a budget of its own, never given back. */
export function bodyContext(ctx: Context): BodyContext {
  const found = (ctx.state as Record<symbol, BodyContext | undefined>)[BODY_CONTEXT]
  if (found) return found
  const budget = new BodyBudget(DEFAULT_REQUEST_LIMITS.inFlightBodyBytes, DEFAULT_REQUEST_LIMITS.addressBodyBytes)
  const address = clientAddress(ctx)
  return { limits: DEFAULT_REQUEST_LIMITS, budget, take: (bytes) => budget.take(address, bytes), reading: () => ({ done() {} }) }
}

/** The address the connection comes from (the server does not trust forwarding headers: app.proxy is off). */
function clientAddress(ctx: Context): string {
  return ctx.req.socket?.remoteAddress ?? 'an unknown address'
}
