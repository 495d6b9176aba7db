import type { Tx } from '../db/database.js'
import type { PinsRepo } from '../db/repos/pins.js'
import type { Pin } from '../model/index.js'
import type { StandingQueues } from './standing.js'

const PAGE = 200

/**
 * Where the aggregator's walk of the pins stands, and whether its context queues are as the database holds them. A pass
 * takes pins off the queues as it decides them, in memory, before its transaction commits: when the transaction fails,
 * the queues are wrong until read again. They are not read again there and then (on PostgreSQL a lost connection fails
 * every statement of the event-loop turn, that read too, and what handles the failure must not depend on it): they are
 * marked stale, and read before anything walks with them (readQueuesIfStale).
 */
export class WalkPosition {
  /** The last pin walked; the next page starts after it. */
  private offset = 0
  /**
   * The newest pin the walk has read: every pin up to it was read at least once (the broadcast ones are in the
   * queues). Below it, a walk reads again only the pins whose batch is here (`held`): the others can only wait, and
   * are read again when their batch arrives (batchArrived). Past it, every new pin is read, once.
   */
  private frontier = 0
  private stale = false
  /** A rewind to the held waiting pins is owed: set before its read, so a failed read leaves it owed, not lost. */
  private rewindDue = false

  constructor(
    private readonly pins: PinsRepo,
    private readonly queues: StandingQueues,
  ) {}

  /** Every pin there is read just now (into the queues, if broadcast): the walk starts from the first that can be decided. */
  start(): void {
    this.queues.reset(this.pins.waitingBroadcast())
    this.stale = false
    this.frontier = this.pins.maxSeq()
    const first = this.pins.minHeldWaitingSeq()
    this.offset = first !== undefined ? first - 1 : this.frontier
  }

  /** Whether the queues are as the database holds them (false after a failed pass, until readQueuesIfStale). */
  get queuesKnown(): boolean {
    return !this.stale
  }

  /**
   * Reads the queues again if a failed pass left them stale, and makes a rewind still owed (rewindWaiting); throws as
   * the reads do, and what they were for stays to do.
   */
  readQueuesIfStale(): void {
    if (this.stale) {
      this.queues.reset(this.pins.waitingBroadcast())
      this.stale = false
    }
    if (this.rewindDue) this.rewindWaiting()
  }

  /** The next page of the walk, claimed (undefined when there is none): read in `tx` when the pass shares it. */
  nextPage(tx?: Tx): Pin[] | undefined {
    for (;;) {
      // Behind the frontier only pins whose batch is here can be decided: a rewind costs what is here and waits,
      // not every pin ever read whose batch never came (a private batch of a group this member is not in).
      const rewinding = this.offset < this.frontier
      const page = wholeBatches(rewinding ? this.pins.heldWaitingBetween(this.offset, this.frontier, PAGE, tx) : this.pins.undispatchedAfter(this.offset, PAGE, tx), PAGE)
      if (page.length === 0) {
        if (!rewinding) return undefined
        this.offset = this.frontier
        continue
      }
      // Claim the page before walking it: a batch arriving during the pass (too late for it) rewinds below it.
      this.offset = page[page.length - 1]!.seq
      if (!rewinding) this.frontier = this.offset
      return page
    }
  }

  /** The next page starts at pin `seq` or before it (undefined: stays). */
  rewind(seq: number | undefined): void {
    if (seq !== undefined) this.offset = Math.min(this.offset, seq - 1)
  }

  /**
   * What settled may be what a waiting pin was waiting for: walk the held waiting ones again. Reads the database, after
   * a commit: on PostgreSQL that read can fail with the connection, and the rewind is then owed to the next walk.
   */
  rewindWaiting(): void {
    this.rewindDue = true
    this.rewind(this.pins.minHeldWaitingSeq())
    this.rewindDue = false
  }

  /**
   * The transaction of a pass over `page` failed: the page is walked again, and the queues, which the pass changed
   * before the rollback, are read again before the next walk. Reads nothing.
   */
  failedPage(page: readonly Pin[]): void {
    this.rewind(page[0]!.seq)
    this.stale = true
  }
}

/**
 * A full page may end inside a batch whose next pins follow it (the pins of one BatchPin event are stored together, in
 * order): those are left to the next page, so that a pass sees each batch's pins whole and need not read them again
 * (see Pass.pinsOf). A batch that fills the page alone stays, so every page moves on. Pins a page leaves out are later
 * in chain order than all it keeps: nothing it decides could have waited for them. (A second event for a batch
 * stores only indexes the first did not have, later in the order; such a batch is read, as before.)
 */
export function wholeBatches(page: Pin[], limit: number): Pin[] {
  if (page.length < limit) return page
  const last = page[page.length - 1]!.batchId
  let cut = page.length
  while (cut > 0 && page[cut - 1]!.batchId === last) cut--
  return cut === 0 ? page : page.slice(0, cut)
}
