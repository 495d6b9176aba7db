/**
 * Entry point of the checkpoint's worker thread (started by checkpoint.ts): builds the new snapshot
 * from the files, so that the export, which takes time in proportion to the database, blocks this
 * thread and not the node's event loop. It imports only the snapshot builder and what that needs.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { buildSnapshot } from './snapshot-build.js'

export type WorkerReport = { kind: 'done'; result: Awaited<ReturnType<typeof buildSnapshot>> } | { kind: 'failed'; message: string; code?: string }

/*
 * The worker runs at the node's own priority, not lowered. A lowered worker does not leave the event loop more of a
 * machine short of CPU; it stalls it: the event loop's thread ends up neither running nor waiting for a core but
 * asleep in the kernel, behind a lock of the process's (its memory map, most likely, which the worker takes to grow its
 * WebAssembly memory) held by a worker that, preempted, gets a core once in a long while. In
 * the checkpoint of `npm run bench -- --only db` (scripts/bench/db.ts) beside two busy processes the stalls are 350-490 ms at nice 19, 70-110 ms at nice
 * 10 and 11-18 ms at the node's priority.
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
