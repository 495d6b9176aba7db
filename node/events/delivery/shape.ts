import type { SubscriptionOptions } from '../../model/index.js'
import { DEFAULT_BATCH_READ_AHEAD, DEFAULT_BATCH_TIMEOUT, parseDurationMs } from '../subscription-input.js'
import type { DeliveryShape } from './dispatcher.js'

/**
 * How a subscription's (parsed) options shape its delivery: readAhead 0 (one at a time) unless given; in batch mode,
 * batches of readAhead events (FireFly's defaults: 50, within 50 ms).
 */
export function deliveryShape(options: SubscriptionOptions): DeliveryShape {
  if (!options.batch) return { readAhead: options.readAhead ?? 0 }
  const size = Math.max(1, options.readAhead || DEFAULT_BATCH_READ_AHEAD)
  return { readAhead: size - 1, batch: { size, timeoutMs: parseDurationMs(options.batchTimeout ?? DEFAULT_BATCH_TIMEOUT, 'options.batchTimeout') } }
}

/**
 * The offset delivery starts after, from `firstEvent` (reference 6.4): `oldest` (or FireFly's stored `-1`) is the
 * whole log, `newest` (the default) what comes after `last`, a number N what comes after N (as FireFly, even
 * ahead of the log).
 */
export function startOffset(firstEvent: string | undefined, last: number): number {
  if (firstEvent === undefined || firstEvent === 'newest') return last
  if (firstEvent === 'oldest') return 0
  const n = Number(firstEvent)
  return Number.isSafeInteger(n) ? Math.max(0, n) : last
}
