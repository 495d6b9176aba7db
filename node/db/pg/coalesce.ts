import type { Step } from './bridge-protocol.js'
import type { InsertRows } from './insert-rows.js'
import { RELEASE, SAVEPOINT } from './pg-tick.js'

/** A group among deferred steps: its SAVEPOINT at `start`, its writes after it, its RELEASE at `end`. */
interface GroupSpan {
  start: number
  end: number
}

/**
 * Merges runs of consecutive groups of queued writes (pg-deferred.ts) that wrote the same single-row INSERTs in the
 * same order (concurrent broadcasts accepted in one turn: a data row, then a message row, each) into one group of
 * multi-row INSERTs, a statement per table where there were two per function. The server then runs one savepoint and
 * a few statements for the turn's accepted messages instead of four statements per message.
 *
 * One function's failure must not undo the others: the merged group carries the original groups (`Step.fallback`,
 * on its first insert). If it fails, the worker rolls it back and runs them instead, each in its savepoint, so that a
 * failing row fails its own function alone, as without merging.
 *
 * A group that writes one table more than once is never merged: statement p carries every function's p-th row, so a
 * later function's row could reach the table before an earlier function's second one, and with ON CONFLICT DO NOTHING
 * the turn would keep a mix no serial order gives. With one row per table and function, each table gets its rows in
 * the functions' order; what changes is only that one function's row in a table may be written before an earlier
 * function's row in another, which no statement merged here can see (InsertRows takes no trigger, foreign key,
 * subquery or update on conflict).
 */
export function coalesceGroups(steps: Step[], rows: InsertRows, nextGroup: () => number): Step[] {
  const out: Step[] = []
  let i = 0
  while (i < steps.length) {
    const run = runAt(steps, i, rows)
    if (run.length < 2) {
      out.push(steps[i]!)
      i++
      continue
    }
    const group = nextGroup()
    out.push({ ...SAVEPOINT, group })
    const first = run[0]!
    const last = run[run.length - 1]!
    const writes = first.end - first.start - 1
    for (let p = 0; p < writes; p++) {
      const merged = rows.merged(run.map((g) => steps[g.start + 1 + p]!), group)
      if (p === 0) merged[0] = { ...merged[0]!, fallback: steps.slice(first.start, last.end + 1) }
      out.push(...merged)
    }
    out.push(RELEASE)
    i = last.end + 1
  }
  return out
}

/** The groups from `i` that can be merged together: consecutive, each of mergeable inserts, all of the same texts. */
function runAt(steps: readonly Step[], i: number, rows: InsertRows): GroupSpan[] {
  const first = groupAt(steps, i, rows)
  if (!first) return []
  const run = [first]
  for (;;) {
    const next = groupAt(steps, run[run.length - 1]!.end + 1, rows)
    if (!next || !sameWrites(steps, first, next)) return run
    run.push(next)
  }
}

/** The group at `i` when each of its writes is a mergeable insert into a table it writes no other time. */
function groupAt(steps: readonly Step[], i: number, rows: InsertRows): GroupSpan | undefined {
  const head = steps[i]
  if (head?.group === undefined || head.text !== SAVEPOINT.text) return undefined
  const tables = new Set<string>()
  let j = i + 1
  while (steps[j]?.group === head.group) {
    const table = rows.tableOf(steps[j]!)
    if (table === undefined || tables.has(table)) return undefined
    tables.add(table)
    j++
  }
  const end = steps[j]
  return j > i + 1 && end !== undefined && end.group === undefined && end.text === RELEASE.text ? { start: i, end: j } : undefined
}

function sameWrites(steps: readonly Step[], a: GroupSpan, b: GroupSpan): boolean {
  if (a.end - a.start !== b.end - b.start) return false
  for (let k = 1; k < a.end - a.start; k++) if (steps[a.start + k]!.text !== steps[b.start + k]!.text) return false
  return true
}
