import { Worker } from 'node:worker_threads'
import { workerBoot } from '../core/worker-boot.js'
import type { JobOutcome, VerdictJob, WorkerReply, WorkerRequest } from './validation-worker.js'

/** A worker with nothing to do for this long is ended (it holds its compiled schemas and a heap). */
const IDLE_MS = 30_000
const WORKER_STACK_MB = 16

/**
 * Checks values in a worker thread (validation-worker.ts), started on first use and ended when idle. Jobs queue in
 * the one worker: a node has few cores, and its event loop needs one. A worker that dies fails what it held with an
 * Error, and a job the worker could not finish answers why (never a verdict: a machine's trouble must not decide what
 * every member decides); the next job starts another worker.
 */
export class ValidationWorker {
  private worker: Worker | undefined
  private nextId = 1
  private readonly waiting = new Map<number, { resolve: (v: JobOutcome[]) => void; reject: (e: Error) => void }>()
  private idleTimer: NodeJS.Timeout | undefined
  private stopped = false

  /** The outcomes of `jobs`, in order. */
  run(jobs: VerdictJob[]): Promise<JobOutcome[]> {
    if (this.stopped) return Promise.reject(new Error('the validation worker is stopped'))
    if (jobs.length === 0) return Promise.resolve([])
    let worker: Worker
    try {
      worker = this.started()
    } catch (err) {
      // A worker that cannot start (its code not found, no threads left) fails the job, never decides a verdict.
      return Promise.reject(new Error(`the validation worker could not start: ${err instanceof Error ? err.message : String(err)}`, { cause: err }))
    }
    const id = this.nextId++
    clearTimeout(this.idleTimer)
    return new Promise<JobOutcome[]>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      // Held while it has work: a process waiting on a verdict stays alive for it.
      worker.ref()
      worker.postMessage({ id, jobs } satisfies WorkerRequest)
    })
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.idleTimer)
    const w = this.worker
    this.worker = undefined
    this.failAll(new Error('the validation worker was stopped'))
    await w?.terminate()
  }

  private started(): Worker {
    if (this.worker) return this.worker
    // A stack far larger than the main thread's: the step meter's stack bound trips long before it runs out.
    const w = new Worker(workerBoot('validation-worker', new URL('./validation-worker.ts', import.meta.url)), { eval: true, resourceLimits: { stackSizeMb: WORKER_STACK_MB } })
    w.on('message', (reply: WorkerReply) => {
      const job = this.waiting.get(reply.id)
      if (!job) return
      this.waiting.delete(reply.id)
      job.resolve(reply.outcomes)
      if (this.waiting.size === 0) {
        // Idle, it is never what keeps a process alive.
        w.unref()
        this.idleTimer = setTimeout(() => void this.retire(w), IDLE_MS).unref()
      }
    })
    w.once('error', (err) => this.lost(w, new Error(`validation worker crashed: ${err.message}`, { cause: err })))
    w.once('exit', (code) => this.lost(w, new Error(`validation worker exited (code ${code})`)))
    this.worker = w
    return w
  }

  private async retire(w: Worker): Promise<void> {
    if (this.worker !== w || this.waiting.size > 0) return
    this.worker = undefined
    await w.terminate()
  }

  private lost(w: Worker, err: Error): void {
    if (this.worker !== w) return
    this.worker = undefined
    this.failAll(err)
  }

  private failAll(err: Error): void {
    const jobs = [...this.waiting.values()]
    this.waiting.clear()
    for (const j of jobs) j.reject(err)
  }
}
