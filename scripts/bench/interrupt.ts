/**
 * Stops the network on Ctrl-C (and SIGTERM, SIGHUP) before exiting 130. `on`, not `once`: Ctrl-C can reach the
 * process twice (from the terminal, and relayed by tsx), and a second signal without a listener would kill it before
 * the network is stopped.
 */
export function stopOnInterrupt(stopping: () => boolean, shutdown: () => Promise<void>): void {
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      if (stopping()) return
      console.error(`\n${sig}: stopping the network`)
      void shutdown().finally(() => process.exit(130))
    })
  }
}
