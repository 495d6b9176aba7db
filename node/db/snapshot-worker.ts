/**
 * Entry point of the checkpoint's worker thread (started by checkpoint.ts): builds the new snapshot
 * from the files, so that the export, which takes time in proportion to the database, blocks this
 * thread and not the node's event loop. It imports only the snapshot builder and what that needs.
 */
import { readlinkSync } from 'node:fs'
import { setPriority } from 'node:os'
import { parentPort, workerData } from 'node:worker_threads'
import { buildSnapshot } from './snapshot-build.js'

export type WorkerReport = { kind: 'done'; result: Awaited<ReturnType<typeof buildSnapshot>> } | { kind: 'failed'; message: string; code?: string }

/**
 * On a busy machine the build competes with the node's own thread for CPU; on Linux a thread has its
 * own nice value, so lowering this one's makes the scheduler prefer the event loop. Best effort:
 * elsewhere the build just runs at normal priority.
 */
function yieldToTheNode(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop())
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, 19)
  } catch {
    // not Linux, or not permitted
  }
}

yieldToTheNode()
const { dir } = workerData as { dir: string }
let report: WorkerReport
try {
  report = { kind: 'done', result: await buildSnapshot(dir) }
} catch (err) {
  const code = (err as NodeJS.ErrnoException | undefined)?.code
  report = { kind: 'failed', message: err instanceof Error ? err.message : String(err), ...(typeof code === 'string' ? { code } : {}) }
}
parentPort?.postMessage(report)
