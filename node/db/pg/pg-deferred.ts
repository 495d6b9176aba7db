import type { Step } from './bridge-protocol.js'
import { coalesceGroups } from './coalesce.js'
import type { InsertRows } from './insert-rows.js'
import { RELEASE } from './pg-tick.js'

/** Where a transaction function began, in what was deferred: enough to drop what it left, or to group it. */
export interface DeferredMark {
  at: number
  flushes: number
  queued: number
}

/**
 * The steps that wait for the next round trip (pg-database.ts): the turn's BEGIN, a function's SAVEPOINT and
 * RELEASE, the writes functions queued (tx.write), a read's RELEASE. They go in front of the next statement sent.
 */
export class DeferredSteps {
  private steps: Step[] = []
  /** Queued writes among the steps. */
  private queuedWrites = 0
  /** Times the steps were taken to be sent. */
  private taken = 0
  private groups = 0
  /** Groups made since the steps were last taken: two or more may be merged (coalesce.ts). */
  private fresh = 0

  /** `rows`: merges the groups of a round trip's single-row inserts into multi-row ones; none, none are merged. */
  constructor(private readonly rows?: InsertRows) {}

  get queued(): number {
    return this.queuedWrites
  }

  push(step: Step): void {
    this.steps.push(step)
  }

  /** A write whose result nobody reads. */
  queue(step: Step): void {
    this.steps.push(step)
    this.queuedWrites++
  }

  /** Removes the last step (a SAVEPOINT that nothing ran in). */
  pop(): void {
    this.steps.pop()
  }

  mark(): DeferredMark {
    return { at: this.steps.length, flushes: this.taken, queued: this.queuedWrites }
  }

  /** Whether anything was sent since `m`. */
  sentSince(m: DeferredMark): boolean {
    return this.taken !== m.flushes
  }

  /** Whether writes were queued since `m`, none of them sent yet. */
  onlyQueuedSince(m: DeferredMark): boolean {
    return this.taken === m.flushes && this.queuedWrites > m.queued
  }

  /** Everything deferred, then `steps`, to be sent now. */
  take(steps: Step[]): Step[] {
    this.taken++
    this.queuedWrites = 0
    if (this.steps.length === 0) return steps
    const deferred = this.rows && this.fresh >= 2 ? coalesceGroups(this.steps, this.rows, () => ++this.groups) : this.steps
    this.fresh = 0
    const all = [...deferred, ...steps]
    this.steps = []
    return all
  }

  /** Drops every step (queued writes included); what is deferred from now on starts with `steps`. */
  drop(steps: Step[] = []): void {
    this.steps = steps
    this.queuedWrites = 0
    this.fresh = 0
  }

  /** Drops what was deferred since `m`, when nothing was sent since. */
  dropSince(m: DeferredMark): void {
    this.steps.length = m.at
    this.queuedWrites = m.queued
  }

  /**
   * Makes what was deferred since `m` (its SAVEPOINT and its queued writes) a group (bridge-protocol.ts), followed by
   * its RELEASE; answers the group's number.
   */
  group(m: DeferredMark): number {
    this.fresh++
    return this.close(m.at)
  }

  /**
   * Makes what was deferred since the steps were last taken a group without a SAVEPOINT of its own: the writes a
   * function queued after its statements went, inside the savepoint those opened on the server. Followed by that
   * savepoint's RELEASE; answers the group's number. Never merged with others (coalesce.ts merges groups that begin
   * with their SAVEPOINT).
   */
  tail(): number {
    return this.close(0)
  }

  /** Tags the steps from `from` on as a new group, followed by its RELEASE; answers the group's number. */
  private close(from: number): number {
    const group = ++this.groups
    for (let i = from; i < this.steps.length; i++) this.steps[i] = { ...this.steps[i]!, group }
    this.steps.push(RELEASE)
    return group
  }
}
