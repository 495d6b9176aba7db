/**
 * How the bridge's worker sends a request's steps on its connection: which go out together (pipelined, or merged into
 * one simple query) and which must wait for the answer of the one before. Used by bridge-worker.ts.
 */
import type pg from 'pg'
import type { Step } from './bridge-protocol.js'

/**
 * Consecutive parameterless steps go as one simple query: one round trip for `RELEASE ...; SAVEPOINT ...`. A COMMIT
 * or ROLLBACK goes alone: in one simple query, a failure before it would skip it and leave the transaction open.
 */
export function merge(steps: Step[]): Step[] {
  const out: Step[] = []
  for (const s of steps) {
    const prev = out[out.length - 1]
    const plain = (x: Step): boolean => x.values === undefined && x.name === undefined && !TX_END.test(x.text)
    // A group's steps are never merged with another's; `RELEASE; SAVEPOINT` starts the next group.
    if (prev && plain(prev) && plain(s) && (prev.group === undefined || prev.group === s.group)) {
      const group = s.group ?? prev.group
      out[out.length - 1] = group === undefined ? { text: `${prev.text}; ${s.text}` } : { text: `${prev.text}; ${s.text}`, group }
    } else out.push(s)
  }
  return out
}

export const TX_START = /^\s*BEGIN\b/i
/** A step that ends the transaction: COMMIT or ROLLBACK alone (not ROLLBACK TO a savepoint). */
export const TX_END = /^\s*(COMMIT|ROLLBACK)\s*$/i

/**
 * Sends one step. pg writes each protocol message of a statement (Bind, Describe, Execute, Sync) with a write of its
 * own; corked, they leave in one, and the server reads them in one.
 */
export function submit(c: pg.Client, step: Step): Promise<pg.QueryResult | pg.QueryResult[]> {
  const stream = (c as unknown as { connection: { stream: { cork(): void; uncork(): void } } }).connection.stream
  stream.cork()
  try {
    return query(c, step)
  } finally {
    stream.uncork()
  }
}

/**
 * Where the steps from `i` that may go out together end: before the request's last step (its answer, whose integers
 * are checked); before a COMMIT or ROLLBACK, which must not run after a failure it would turn into a rollback; and
 * before a BEGIN or a ROLLBACK TO, which would run after a failure where every other step is refused.
 */
export function spanEnd(steps: Step[], i: number): number {
  let j = i
  while (j < steps.length - 1 && !TX_END.test(steps[j]!.text) && (j === i || !RUNS_AFTER_FAILURE.test(steps[j]!.text))) j++
  return j
}

const RUNS_AFTER_FAILURE = /^\s*BEGIN\b|\bROLLBACK\s+TO\b/i

/**
 * Sends `steps` at once, pg's pipeline mode (one write, the server runs them back to back), and waits for them all;
 * answers the first failure. Inside a transaction, every step after a failed one fails too (the transaction is aborted
 * until rolled back), so none of those ran.
 */
export async function pipelined(c: pg.Client, steps: Step[]): Promise<{ index: number; error: unknown } | undefined> {
  const stream = (c as unknown as { connection: { stream: { cork(): void; uncork(): void } } }).connection.stream
  stream.cork()
  let sent: Promise<unknown>[]
  try {
    sent = steps.map((step) => query(c, step))
  } finally {
    stream.uncork()
  }
  const settled = await Promise.allSettled(sent)
  const index = settled.findIndex((r) => r.status === 'rejected')
  if (index < 0) return undefined
  return { index, error: (settled[index] as PromiseRejectedResult).reason }
}

function query(c: pg.Client, step: Step): Promise<pg.QueryResult | pg.QueryResult[]> {
  return step.values === undefined && step.name === undefined ? c.query(step.text) : c.query({ text: step.text, values: step.values ?? [], ...(step.name ? { name: step.name } : {}) })
}
