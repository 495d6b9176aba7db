/**
 * Pacing for work that must eventually succeed (a download, a dispatch, a reconnect): doubling waits between
 * tries, capped, and the reason of the last failure, so a long outage is logged once per distinct problem rather
 * than once per retry.
 */
export class Backoff {
  private current: number
  private problem: string | undefined

  constructor(
    private readonly minMs: number,
    private readonly maxMs: number,
  ) {
    this.current = minMs
  }

  /** The wait before the next try; the one after is twice as long, up to the cap. */
  next(): number {
    const wait = this.current
    this.current = Math.min(this.current * 2, this.maxMs)
    return wait
  }

  /** Records why a try failed; true when the reason is new (worth a log line). */
  failed(problem: string): boolean {
    const fresh = problem !== this.problem
    this.problem = problem
    return fresh
  }

  /** Whether a try has failed since the last success. */
  get retrying(): boolean {
    return this.problem !== undefined
  }

  /** A success: the next failure starts again from the shortest wait, and is news again. */
  reset(): void {
    this.current = this.minMs
    this.problem = undefined
  }
}

/** Waits `ms`, or less when `signal` aborts (it resolves either way: the caller checks why it woke). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}
