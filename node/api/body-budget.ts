import type { Context, Next } from 'koa'
import { DEFAULT_REQUEST_LIMITS, type RequestLimits } from '../core/limits.js'

/**
 * The memory this member gives to request bodies being read, over every connection at once. A body holds its share
 * from its first byte until its response has gone, so a crowd of clients that each send part of a large body and
 * stop cannot make the node hold more than the budget, whatever their number.
 */
export class BodyBudget {
  private heldBytes = 0

  constructor(readonly limitBytes: number) {}

  get held(): number {
    return this.heldBytes
  }

  /** Takes `bytes` from the budget, or answers false (and takes nothing) if that would pass the limit. */
  take(bytes: number): boolean {
    if (this.heldBytes + bytes > this.limitBytes) return false
    this.heldBytes += bytes
    return true
  }

  give(bytes: number): void {
    this.heldBytes = Math.max(0, this.heldBytes - bytes)
  }
}

/** What a route reading a body needs from the server it runs in; `take` charges this request's share. */
export interface BodyContext {
  limits: RequestLimits
  budget: BodyBudget
  /** Takes `bytes` more for this request, given back once its handler is done; false when over the budget. */
  take(bytes: number): boolean
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
    const body: BodyContext = {
      limits,
      budget,
      take(bytes) {
        if (!budget.take(bytes)) return false
        held += bytes
        return true
      },
    }
    ;(ctx.state as Record<symbol, BodyContext>)[BODY_CONTEXT] = body
    try {
      await next()
    } finally {
      budget.give(held)
    }
  }
}

/** The server's body context; outside a server (unit tests) the defaults and a budget of its own, never given back. */
export function bodyContext(ctx: Context): BodyContext {
  const found = (ctx.state as Record<symbol, BodyContext | undefined>)[BODY_CONTEXT]
  if (found) return found
  const budget = new BodyBudget(DEFAULT_REQUEST_LIMITS.inFlightBodyBytes)
  return { limits: DEFAULT_REQUEST_LIMITS, budget, take: (bytes) => budget.take(bytes) }
}
