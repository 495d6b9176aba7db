/** Background loops waiting until the database accepts writes again (room on the disk, its server back). */
export class WritableWaiters {
  private readonly waiters = new Set<() => void>()

  /** Resolves at the next wake(), or when `signal` aborts. */
  wait(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.waiters.delete(done)
        signal?.removeEventListener('abort', done)
        resolve()
      }
      this.waiters.add(done)
      signal?.addEventListener('abort', done, { once: true })
    })
  }

  wake(): void {
    for (const wake of [...this.waiters]) wake()
  }
}
