/**
 * Entry point of the validation worker thread (started by validation-offthread.ts): checks values against datatype
 * schemas with exactly the code the main thread uses (validation-schema.ts, validation-verdict.ts), so that a large
 * value's validation blocks this thread and not the node's event loop. It imports only that code.
 */
import { parentPort } from 'node:worker_threads'
import type { DatatypeRef } from '../model/index.js'
import { compileDatatypeSchema, type DatatypeSchema } from './validation-schema.js'
import { schemaVerdict, type Verdict } from './validation-verdict.js'

export interface VerdictJob {
  /** The datatype's schema, as JSON text (the worker compiles it, and keeps it for the next jobs). */
  schemaRaw: string
  datatype: DatatypeRef
  valueRaw: string
}

/** A job's verdict, or why none could be reached here (the stack ran out, say): never a verdict. */
export type JobOutcome = Verdict | { error: string }

export type WorkerRequest = { id: number; jobs: VerdictJob[] }
export type WorkerReply = { id: number; outcomes: JobOutcome[] }

/** Compiled schemas kept, least recently used first out. */
const MAX_COMPILED = 64
const compiled = new Map<string, DatatypeSchema>()

function schemaOf(raw: string): DatatypeSchema {
  let s = compiled.get(raw)
  if (s) compiled.delete(raw)
  else s = compileDatatypeSchema(raw)
  compiled.set(raw, s)
  if (compiled.size > MAX_COMPILED) compiled.delete(compiled.keys().next().value!)
  return s
}

/*
 * The worker runs at the node's own priority, not a lowered one: a preempted low-priority thread of the process can
 * hold a lock the event loop then sleeps behind (measured with the checkpoint's worker, see snapshot-worker.ts:
 * stalls of 70-110 ms at nice 10, 350-490 ms at nice 19, 11-18 ms at the node's priority, on a machine short of CPU).
 */
parentPort?.on('message', (req: WorkerRequest) => {
  const outcomes = req.jobs.map((j): JobOutcome => {
    try {
      const schema = schemaOf(j.schemaRaw)
      return schemaVerdict(j.datatype, (raw) => schema.check(raw), j.valueRaw)
    } catch (err) {
      return { error: err instanceof Error ? err.message : String(err) }
    }
  })
  parentPort!.postMessage({ id: req.id, outcomes } satisfies WorkerReply)
})
