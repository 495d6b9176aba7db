/**
 * A switch that a loop consults before it goes on with one kind of work: open unless held; while held, `whenOpen`
 * waits, and `release` wakes every waiter at once (no polling). It lives in memory only: the admin routes' chain and
 * IPFS read controls are gates that the chain follower and the fetchers consult, so holding one stops the work
 * without stopping the component, and releasing it lets the work go on from where it stood.
 */
export class Gate {
  /** Defined while held: the waiters to wake at the release. */
  private waiters: Set<() => void> | undefined

  get held(): boolean {
    return this.waiters !== undefined
  }

  /** Holds the gate (holding it again changes nothing). */
  hold(): void {
    this.waiters ??= new Set()
  }

  /** Opens the gate and wakes whoever waits at it (releasing an open gate changes nothing). */
  release(): void {
    const waiting = this.waiters
    this.waiters = undefined
    for (const wake of waiting ?? []) wake()
  }

  /** Resolves at once while open; while held, once released, or once `signal` aborts (the caller checks which). */
  whenOpen(signal?: AbortSignal): Promise<void> {
    const waiters = this.waiters
    if (waiters === undefined || signal?.aborted) return Promise.resolve()
    return new Promise((resolve) => {
      const done = (): void => {
        waiters.delete(done)
        signal?.removeEventListener('abort', done)
        resolve()
      }
      waiters.add(done)
      signal?.addEventListener('abort', done, { once: true })
    })
  }
}
