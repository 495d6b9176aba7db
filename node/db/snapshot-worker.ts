/**
 * Entry point of the checkpoint's worker thread (started by checkpoint.ts): builds the new snapshot
 * from the files, so that the export, which takes time in proportion to the database, blocks this
 * thread and not the node's event loop. It imports only the snapshot builder and what that needs.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { buildSnapshot } from './snapshot-build.js'

export type WorkerReport = { kind: 'done'; result: Awaited<ReturnType<typeof buildSnapshot>> } | { kind: 'failed'; message: string; code?: string }

/*
 * The worker runs at the node's own priority. It used to lower its thread's (nice 19) so that the scheduler would
 * prefer the event loop; on a machine short of CPU that stalled the event loop instead, for 350-490 ms at a time in
 * test/db/checkpoint-stall.test.ts beside two busy processes: the event loop's thread was neither running nor waiting
 * for a core but asleep in the kernel, behind a lock of the process's (its memory map, most likely, which the worker
 * takes to grow its WebAssembly memory) held by a worker that, preempted at nice 19, got a core once in a long while.
 * At nice 10 the stalls were 70-110 ms; at the node's priority, 11-18 ms.
 */
const { dir } = workerData as { dir: string }
let report: WorkerReport
try {
  report = { kind: 'done', result: await buildSnapshot(dir) }
} catch (err) {
  const code = (err as NodeJS.ErrnoException | undefined)?.code
  report = { kind: 'failed', message: err instanceof Error ? err.message : String(err), ...(typeof code === 'string' ? { code } : {}) }
}
parentPort?.postMessage(report)
