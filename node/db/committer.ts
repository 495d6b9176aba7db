import { Backoff, sleep } from '../core/backoff.js'
import { errorMessage, isParleyError } from '../core/errors.js'
import { now } from '../core/time.js'
import { DISK_FULL_RETRY_MAX_MS, DISK_FULL_RETRY_MIN_MS, diskFullError, isDiskFull, type DiskFull } from './disk-full.js'
import { DatabaseError } from './errors.js'
import { frameHeader } from './journal-record.js'
import type { JournalSink } from './journal-file.js'

/** What the committer runs between flushes, when no write is in flight: the checkpoint's rotation. */
export interface Maintenance {
  /** Whether the journal has grown enough to be worth a checkpoint now. */
  due(sink: JournalSink): boolean
  /**
   * The part that must not overlap a write (sealing the tick, flushing it to the old journal with
   * `flushThrough`, swapping the journal); the rest goes on in the background until `build` settles.
   * `persist` runs a step that must not be abandoned half-way (a rename past the point of no return):
   * while the disk is full it is tried again, as a journal write is.
   */
  run(sink: JournalSink, flushThrough: (seq: number) => Promise<void>, persist: Persist): Promise<MaintenanceResult>
}

/** Runs `write`, trying it again (with the committer stalled) for as long as it fails for want of space. */
export type Persist = <T>(write: () => Promise<T>) => Promise<T>

/** What the committer tells its owner. */
export interface CommitterEvents {
  /** A write failed for want of space: the committer retries it, and its owner refuses new writes meanwhile. */
  stalled(full: DiskFull): void
  /** The write that stalled went through: writes are accepted again. */
  resumed(full: DiskFull): void
  /** The journal cannot be trusted any more (or the owner gave up waiting for space): writes are refused for good. */
  failed(err: Error): void
}

export type MaintenanceResult =
  /** `sink`: the journal to append to from now on; `build`: settles when the checkpoint has finished. */
  | { ok: true; sink: JournalSink; build: Promise<void> }
  /** `fatal`: the journal on disk may no longer be the one the sink writes to. */
  | { ok: false; fatal: boolean; error: Error }

interface Pending {
  seq: number
  record: Buffer
  resolve(): void
  reject(err: Error): void
}

interface Waiter {
  resolve(): void
  reject(err: Error): void
}

/** Above this, queued records wait for the next flush, so one frame stays far below the frame size limit. */
const MAX_FLUSH_BYTES = 64 * 1024 * 1024

/**
 * Group commit. The database commits each tick's transactions in memory and queues their journal
 * record here; one loop writes everything queued as one frame with one write and one fdatasync, then
 * resolves those records. Records queued while a sync is in flight form the next frame, so under load
 * the cost of a sync is shared by every tick that ended during the previous one.
 *
 * The loop is also the only place a checkpoint's rotation runs, so the journal is never swapped under a
 * write; the snapshot build that follows runs in a worker thread while the loop goes on flushing.
 *
 * A write the kernel refuses for want of space (ENOSPC, EDQUOT) stalls the committer instead of failing
 * it: the journal has cut what it wrote of the frame, the records stay queued (the database in memory
 * already holds their transactions, which neither resolve nor reject meanwhile), and the same frame is
 * written again every 0.5–2 s until it goes through. While stalled, `diskFull` says so and the owner
 * refuses new writes, so the queue does not grow. Closing gives up: one last try, then the stalled
 * records reject with STORAGE_FULL (they were never acknowledged).
 *
 * If a sync fails (or a write fails otherwise), the outcome on disk is unknown (and Linux may have
 * dropped the dirty pages), so retrying could report success for data that is gone. Instead every
 * waiting transaction is rejected and the committer stays failed: the owner refuses writes until a
 * restart recovers from the files.
 */
export class Committer {
  private queue: Pending[] = []
  private inFlight: Pending[] = []
  private checkpointWaiters: Waiter[] = []
  private loop: Promise<void> | undefined
  private failure: Error | undefined
  private full: DiskFull | undefined
  /** Aborted when the owner closes: a full disk is then not waited out any more. */
  private readonly givingUp = new AbortController()
  private last: Promise<void> = Promise.resolve()
  private durable = 0
  private flushCount = 0

  constructor(
    private sink: JournalSink,
    private readonly maintenance: Maintenance,
    private readonly events: CommitterEvents,
    durableSeq: number,
  ) {
    this.durable = durableSeq
  }

  /** Why writes are refused for good: DB_FAILED, or STORAGE_FULL once a stall was given up at close. */
  get failed(): Error | undefined {
    return this.failure
  }

  /** Set while a write waits for space (the committer is stalled, nothing is lost). */
  get diskFull(): DiskFull | undefined {
    return this.full
  }

  get durableSeq(): number {
    return this.durable
  }

  get flushes(): number {
    return this.flushCount
  }

  get pending(): number {
    return this.queue.length + this.inFlight.length
  }

  get journalBytes(): number {
    return this.sink.size
  }

  /** Queues a committed transaction's record; resolves once the sync that covers it has completed. */
  commit(seq: number, record: Buffer): Promise<void> {
    if (this.failure) return Promise.reject(this.failure)
    const done = new Promise<void>((resolve, reject) => this.queue.push({ seq, record, resolve, reject }))
    this.last = done
    this.kick()
    return done
  }

  /** Resolves once everything committed so far is durable (for transactions that wrote nothing). */
  settled(): Promise<void> {
    return this.failure ? Promise.reject(this.failure) : this.last
  }

  /**
   * Runs one checkpoint step after the records queued so far have been flushed (see Checkpointer.run);
   * resolves when its build has finished.
   */
  checkpoint(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure)
    const done = new Promise<void>((resolve, reject) => this.checkpointWaiters.push({ resolve, reject }))
    this.kick()
    return done
  }

  /**
   * From now on a write that finds the disk full is tried once more and then fails (its records reject with
   * STORAGE_FULL) instead of waiting: for shutdown, which must not wait for space that may never come.
   */
  stopWaitingForSpace(): void {
    this.givingUp.abort()
  }

  /** Waits for the loop to go idle, then closes the journal. */
  async close(): Promise<void> {
    while (this.loop) await this.loop
    await this.sink.close()
  }

  private kick(): void {
    if (this.loop || this.failure) return
    // No setImmediate to gather a turn's commits: the database already seals a turn's transactions
    // into one record at the end of the turn, and waiting another turn would only add latency.
    this.loop = Promise.resolve()
      .then(() => this.run())
      .finally(() => {
        this.loop = undefined
        // Work may have arrived after the loop's last check but before it was marked idle.
        if (this.queue.length > 0 || this.checkpointWaiters.length > 0) this.kick()
      })
  }

  private async run(): Promise<void> {
    try {
      for (;;) {
        if (this.failure) return
        if (this.queue.length > 0) {
          await this.flush()
        } else if (this.checkpointWaiters.length > 0 || this.maintenance.due(this.sink)) {
          await this.runMaintenance()
        } else {
          return
        }
      }
    } catch (err) {
      this.fail(err)
    }
  }

  /** Writes the queued records up to `seq`: those a rotation must leave in the journal it closes. */
  private async flushThrough(seq: number): Promise<void> {
    while ((this.queue[0]?.seq ?? Infinity) <= seq) await this.flush(seq)
  }

  private async flush(maxSeq = Infinity): Promise<void> {
    let bytes = 0
    let n = 0
    while (
      n < this.queue.length &&
      (this.queue[n]?.seq ?? Infinity) <= maxSeq &&
      (n === 0 || bytes + (this.queue[n]?.record.length ?? 0) <= MAX_FLUSH_BYTES)
    ) {
      bytes += this.queue[n]?.record.length ?? 0
      n++
    }
    this.inFlight = this.queue.splice(0, n)
    const records = this.inFlight.map((p) => p.record)
    const frame = [frameHeader(records), ...records]
    await this.persist(() => this.sink.append(frame))
    const done = this.inFlight
    this.inFlight = []
    this.flushCount++
    this.durable = done.at(-1)?.seq ?? this.durable
    for (const p of done) p.resolve()
  }

  private async runMaintenance(): Promise<void> {
    const waiters = this.checkpointWaiters
    this.checkpointWaiters = []
    let result: MaintenanceResult
    try {
      result = await this.maintenance.run(
        this.sink,
        (seq) => this.flushThrough(seq),
        (write) => this.persist(write),
      )
    } catch (err) {
      for (const w of waiters) w.reject(err instanceof Error ? err : new Error(String(err)))
      throw err
    }
    if (result.ok) {
      this.sink = result.sink
      // Not awaited: commits go on into the new journal while the snapshot is built.
      result.build.then(
        () => {
          for (const w of waiters) w.resolve()
        },
        (err: Error) => {
          for (const w of waiters) w.reject(err)
        },
      )
      return
    }
    if (result.fatal) {
      for (const w of waiters) w.reject(result.error)
      throw result.error
    }
    // The journal still holds everything: carry on with it (the checkpointer backs off before retrying).
    for (const w of waiters) w.reject(result.error)
  }

  /** See Persist. The sink has cut off whatever part of a refused write reached the file. */
  private async persist<T>(write: () => Promise<T>): Promise<T> {
    const pace = new Backoff(DISK_FULL_RETRY_MIN_MS, DISK_FULL_RETRY_MAX_MS)
    for (;;) {
      try {
        const result = await write()
        this.spaceAgain()
        return result
      } catch (err) {
        if (!isDiskFull(err)) throw err
        const full = this.noSpace(err)
        if (this.givingUp.signal.aborted) throw diskFullError(full, err)
        await sleep(pace.next(), this.givingUp.signal)
      }
    }
  }

  private noSpace(err: unknown): DiskFull {
    if (!this.full) {
      this.full = { since: now(), detail: errorMessage(err) }
      this.events.stalled(this.full)
    }
    return this.full
  }

  private spaceAgain(): void {
    const full = this.full
    if (!full) return
    this.full = undefined
    this.events.resumed(full)
  }

  private fail(err: unknown): void {
    // Given up at close while the disk was full: the records were not lost to a broken disk, only never written.
    const failure = isParleyError(err, 'STORAGE_FULL')
      ? err
      : new DatabaseError('DB_FAILED', `the journal could not be made durable; writes are refused until restart: ${String(err)}`, { cause: err })
    this.failure = failure
    this.full = undefined
    for (const p of [...this.inFlight, ...this.queue]) p.reject(failure)
    for (const w of this.checkpointWaiters) w.reject(failure)
    this.inFlight = []
    this.queue = []
    this.checkpointWaiters = []
    this.events.failed(failure)
  }
}
