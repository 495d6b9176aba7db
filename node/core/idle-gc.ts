import { performance } from 'node:perf_hooks'

/** How often the process looks at how busy it was. */
const CHECK_EVERY_MS = 2_000
/** Busier than this over a period (share of the time the event loop ran): there was work, its garbage may be left. */
const BUSY = 0.05
/** Quieter than this over a whole period: at rest (an idle member of a 20-member network runs 10-30 ms per 2 s). */
const QUIET = 0.025
/**
 * Quiet periods in a row before any collection but the first (the start's): a member resting a few seconds between
 * bursts keeps its heap, which the next burst would only grow back. Collecting after each such rest cost the sender
 * ~10 % CPU per message in the benchmark's warm burst, which follows the first after a few seconds.
 */
const LATER_QUIET_PERIODS = 15
/**
 * Quiet periods in a row after the start's collection before one more: the start's work is over for good, and
 * nothing says the application's is coming, so a member resting after its start gives back what its start grew.
 */
const START_SETTLE_PERIODS = 3

/** What the idle collector reads and calls; the process's own unless a test passes its own. */
export interface IdleGcDeps {
  /** A full collection. */
  collect: () => void
  /** Gives the system back what malloc holds free (node/core/malloc-trim.ts); absent where the build cannot. */
  trim?: () => void
  /** The share of the time the event loop ran since the previous call (0 to 1). */
  busyShare: () => number
  /** Calls `check` every period until the returned function is called. */
  every: (ms: number, check: () => void) => () => void
}

/**
 * Gives memory back once a burst of work is over. V8 collects the young generation as it fills, and the old one when
 * it has grown; a process that goes quiet after a burst (a member's start: loading its code, its database, every
 * other member's registration) keeps the young generation at the size the burst grew it to and the old generation's
 * pages as the burst left them, since nothing more is allocated to trigger a collection. One full collection once
 * the event loop has been quiet for a whole period after a busy one frees the old generation's pages; after later
 * work, once it has been quiet for LATER_QUIET_PERIODS. Under load nothing is forced: the loop is busy, and V8
 * collects as it does.
 *
 * The start's collection comes too soon to shrink the young generation: V8 shrinks it only at a collection after ~5 s
 * of low allocation. A member still at rest START_SETTLE_PERIODS later, with no work since, collects once more, which
 * does: idle members of a 20-member network 78–92 MiB against 89–120. After later work the young generation keeps
 * the size the burst grew it to until a long rest, since collecting after each short rest made the next burst grow
 * it back (docs/benchmarks.md, "What a start avoids").
 *
 * At the first quiet period after a busy one, and after each collection, malloc's free pages go back too (`trim`).
 *
 * Needs `gc`, exposed by `--expose-gc` (the network runs member nodes with it); without it, this does nothing.
 */
export function collectWhenIdle(deps: IdleGcDeps | undefined = processDeps()): { stop(): void } {
  if (deps === undefined) return { stop: () => {} }
  let busySinceCollected = true
  let busySinceTrimmed = true
  let collections = 0
  let quietPeriods = 0
  const stop = deps.every(CHECK_EVERY_MS, () => {
    const share = deps.busyShare()
    if (share > BUSY) busySinceCollected = busySinceTrimmed = true
    const quiet = share < QUIET
    quietPeriods = quiet ? quietPeriods + 1 : 0
    let collected = false
    if (quietPeriods >= restNeeded(collections, busySinceCollected)) {
      busySinceCollected = false
      collections++
      deps.collect()
      collected = true
    }
    // A trim is cheap beside a collection: 1-2 ms, and then a page fault for each page a later burst takes again
    // (~10 MiB at most), where a collection makes the next burst grow the heap back. So it follows any busy period at
    // the first quiet one: the compiler threads' arenas grow whenever TurboFan optimises, not only during a start.
    if (quiet && (collected || busySinceTrimmed)) {
      busySinceTrimmed = false
      deps.trim?.()
    }
  })
  return { stop }
}

/** Quiet periods in a row before the next collection, given how many ran and whether there was work since the last. */
function restNeeded(collections: number, busySinceCollected: boolean): number {
  if (collections === 0) return 1
  // The start's settling collection: still at rest since the start's, with no work in between.
  if (collections === 1 && !busySinceCollected) return 1 + START_SETTLE_PERIODS
  return busySinceCollected ? LATER_QUIET_PERIODS : Infinity
}

/** The process's own: undefined without `gc`. */
export function processDeps(trim?: () => void): IdleGcDeps | undefined {
  const gc = (globalThis as { gc?: () => void }).gc
  if (typeof gc !== 'function') return undefined
  let last = performance.eventLoopUtilization()
  return {
    ...(trim !== undefined ? { trim } : {}),
    // Without arguments: on Node 20's V8, `gc({ type: 'major', execution: 'sync' })` runs a scavenge of the young
    // generation only (`--trace-gc` prints "Scavenge ... testing"), leaving the old generation's pages as they were.
    collect: () => gc(),
    busyShare: () => {
      const now = performance.eventLoopUtilization()
      const share = performance.eventLoopUtilization(now, last).utilization
      last = now
      return share
    },
    every: (ms, check) => {
      const timer = setInterval(check, ms)
      timer.unref()
      return () => clearInterval(timer)
    },
  }
}
