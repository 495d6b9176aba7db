/**
 * A long-running part of a node. `start` begins its work; `stop` ends it and resolves only once the work it had in
 * flight has finished or been abandoned, so that whatever it writes is settled before the parts it depends on (and
 * finally the database) stop.
 */
export interface Component {
  readonly name: string
  start(): void | Promise<void>
  stop(): Promise<void>
}

/**
 * Starts components in order and answers a function that stops them in reverse order. If one fails to start,
 * those already started are stopped (in reverse) before the failure is thrown, so nothing is left running.
 */
export async function startAll(components: readonly Component[], log: (line: string) => void): Promise<() => Promise<void>> {
  const started: Component[] = []
  const stopAll = async (): Promise<void> => {
    for (const c of started.splice(0).reverse()) {
      try {
        await c.stop()
      } catch (err) {
        log(`${c.name}: stop failed: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
  }
  try {
    for (const c of components) {
      await c.start()
      started.push(c)
    }
  } catch (err) {
    await stopAll()
    throw err
  }
  return stopAll
}
