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

/** What a route reading a body needs from the server it runs in. */
export interface BodyContext {
  limits: RequestLimits
  budget: BodyBudget
}

const BODY_CONTEXT = Symbol('parley.body')

/** Gives every request of this server its limits and the shared budget (read back with bodyContext). */
export function bodyContextMiddleware(body: BodyContext) {
  return async (ctx: Context, next: Next): Promise<void> => {
    ;(ctx.state as Record<symbol, BodyContext>)[BODY_CONTEXT] = body
    await next()
  }
}

/** The server's body context; defaults (and a budget of its own) for a context built outside a server, as in unit tests. */
export function bodyContext(ctx: Context): BodyContext {
  return (ctx.state as Record<symbol, BodyContext | undefined>)[BODY_CONTEXT] ?? { limits: DEFAULT_REQUEST_LIMITS, budget: new BodyBudget(DEFAULT_REQUEST_LIMITS.inFlightBodyBytes) }
}
