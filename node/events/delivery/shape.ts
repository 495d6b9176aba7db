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
 * FireFly's `calcFirstOffset` (`offset_calc.go`) for `firstEvent`: `oldest` is -1; `newest` (or nothing) the newest
 * event's sequence `last`, or -1 while the log is empty; a number is taken as it is, even beyond the newest event
 * (events up to it are then skipped as they arrive). Durable subscriptions store this at creation.
 */
export function firstEventOffset(firstEvent: string | undefined, last: number): number {
  if (firstEvent === 'oldest') return -1
  if (firstEvent === undefined || firstEvent === 'newest') return last > 0 ? last : -1
  return Number(firstEvent)
}

/** The offset delivery starts after (sequences start at 1, so FireFly's -1 is 0 here). */
export function startOffset(firstEvent: string | undefined, last: number): number {
  return Math.max(0, firstEventOffset(firstEvent, last))
}
