import type { Context, Next } from 'koa'
import { ParleyError } from '../core/errors.js'
import { DEFAULT_REQUEST_LIMITS, type RequestLimits } from '../core/limits.js'

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

  constructor(
    readonly limitBytes: number,
    readonly addressLimitBytes: number,
  ) {}

  get held(): number {
    return this.heldBytes
  }

  heldBy(address: string): number {
    return this.byAddress.get(address) ?? 0
  }

  /** Takes `bytes` for a body from `address`, or answers the refusal (and takes nothing) if that would pass a limit. */
  take(address: string, bytes: number): ParleyError | undefined {
    const own = this.heldBy(address)
    if (own + bytes > this.addressLimitBytes) {
      return new ParleyError('TOO_MANY_REQUESTS', `requests from ${address} already hold ${own} bytes of request bodies being read here; at most ${this.addressLimitBytes} from one address (limits.addressBodyBytes): try again shortly`)
    }
    if (this.heldBytes + bytes > this.limitBytes) {
      return new ParleyError('TOO_MANY_REQUESTS', `this member is already reading ${this.heldBytes} bytes of request bodies; at most ${this.limitBytes} at once (limits.inFlightBodyBytes): try again shortly`)
    }
    this.heldBytes += bytes
    this.byAddress.set(address, own + bytes)
    return undefined
  }

  give(address: string, bytes: number): void {
    this.heldBytes = Math.max(0, this.heldBytes - bytes)
    const left = this.heldBy(address) - bytes
    if (left > 0) this.byAddress.set(address, left)
    else this.byAddress.delete(address)
  }
}

/** What a route reading a body needs from the server it runs in; `take` charges this request's share. */
export interface BodyContext {
  limits: RequestLimits
  budget: BodyBudget
  /** Takes `bytes` more for this request, given back once its handler is done; the refusal when over a budget. */
  take(bytes: number): ParleyError | undefined
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
    const body: BodyContext = {
      limits,
      budget,
      take(bytes) {
        const refused = budget.take(address, bytes)
        if (!refused) held += bytes
        return refused
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
  return { limits: DEFAULT_REQUEST_LIMITS, budget, take: (bytes) => budget.take(address, bytes) }
}

/** The address the connection comes from (the server does not trust forwarding headers: app.proxy is off). */
function clientAddress(ctx: Context): string {
  return ctx.req.socket?.remoteAddress ?? 'an unknown address'
}
