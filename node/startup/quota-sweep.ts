import { errorMessage } from '../core/errors.js'
import type { Component } from '../core/lifecycle.js'

/** A sweep that deletes what a quota keeps only for a while; answers how many things it deleted. */
export type Sweep = () => Promise<number>

/**
 * Runs the quotas' sweeps (blobs no message refers to, private batches never pinned) every `intervalMs`, one pass at a
 * time: a pass still running when the next is due is not doubled. A failing pass is a log line, and the next one tries
 * again. Stopping waits for a pass under way.
 */
export function quotaSweep(sweeps: readonly Sweep[], intervalMs: number, log: (line: string) => void): Component & { pass(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> | undefined
  /** A pass now, or the one under way. */
  const pass = (): Promise<void> => {
    if (running) return running
    running = (async () => {
      for (const sweep of sweeps) {
        try {
          await sweep()
        } catch (err) {
          log(`quotas: a sweep failed, to be tried again in ${intervalMs} ms (quotas.sweepIntervalMs): ${errorMessage(err)}`)
        }
      }
    })().finally(() => (running = undefined))
    return running
  }
  return {
    name: 'quota sweep',
    pass,
    start: () => {
      timer = setInterval(() => void pass(), intervalMs)
      timer.unref()
    },
    stop: async () => {
      clearInterval(timer)
      await running
    },
  }
}
