import { performance } from 'node:perf_hooks'

/** How often the process looks at how busy it was. */
const CHECK_EVERY_MS = 2_000
/** Busier than this over a period (share of the time the event loop ran): there was work, its garbage may be left. */
const BUSY = 0.05
/** Quieter than this over a whole period: at rest. */
const QUIET = 0.01

/**
 * Gives memory back once a burst of work is over. V8 collects the young generation as it fills, and the old one when
 * it has grown; a process that goes quiet after a burst (a member's start: loading its code, its database, every
 * other member's registration) keeps the young generation at the size the burst grew it to and the old generation's
 * pages as the burst left them, since nothing more is allocated to trigger a collection. One full collection once
 * the event loop has been quiet for a whole period after a busy one takes an idle member's heap from 34 MiB to 17-25
 * MiB (its RSS down by 4-11 MiB). Under load nothing is forced: the loop is busy, and V8 collects as it does.
 *
 * Needs `gc`, exposed by `--expose-gc` (the network runs member nodes with it); without it, this does nothing.
 */
export function collectWhenIdle(): { stop(): void } {
  const gc = (globalThis as { gc?: (options?: { type: 'major'; execution: 'async' | 'sync' }) => void }).gc
  if (typeof gc !== 'function') return { stop: () => {} }
  let last = performance.eventLoopUtilization()
  let busySinceCollected = true
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization()
    const share = performance.eventLoopUtilization(now, last).utilization
    last = now
    if (share > BUSY) busySinceCollected = true
    else if (share < QUIET && busySinceCollected) {
      busySinceCollected = false
      gc({ type: 'major', execution: 'sync' })
    }
  }, CHECK_EVERY_MS)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}
