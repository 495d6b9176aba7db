import type { SubscriptionOptions } from '../../model/index.js'
import type { DeliveryShape } from './dispatcher.js'

/** FireFly's `subscription.defaults`: batch mode sends up to 50 events a batch, waiting at most 50 ms for it to fill. */
export const DEFAULT_BATCH_SIZE = 50
export const DEFAULT_BATCH_TIMEOUT_MS = 50

/** How a subscription's options shape its delivery: readAhead 0 (one at a time) unless given; batches of readAhead. */
export function deliveryShape(options: SubscriptionOptions): DeliveryShape {
  if (!options.batch) return { readAhead: options.readAhead ?? 0 }
  const size = Math.max(1, options.readAhead ?? DEFAULT_BATCH_SIZE)
  return { readAhead: size - 1, batch: { size, timeoutMs: durationMs(options.batchTimeout) ?? DEFAULT_BATCH_TIMEOUT_MS } }
}

/**
 * The offset delivery starts after, from `firstEvent` (reference 6.4): `oldest` (or FireFly's stored `-1`) is the
 * whole log, `newest` (the default) what comes after `last`, a number N what comes after N.
 */
export function startOffset(firstEvent: string | undefined, last: number): number {
  if (firstEvent === undefined || firstEvent === 'newest') return last
  if (firstEvent === 'oldest') return 0
  const n = Number(firstEvent)
  return Number.isSafeInteger(n) ? Math.max(0, n) : last
}

/** Go's duration text (`50ms`, `1.5s`, `2m`) or a number of milliseconds. */
function durationMs(v: string | number | undefined): number | undefined {
  if (v === undefined) return undefined
  if (typeof v === 'number') return v
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(v.trim())
  if (!m) return undefined
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] ?? 'ms']!
  return Math.round(Number(m[1]) * unit)
}
