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
   */
  run(sink: JournalSink, flushThrough: (seq: number) => Promise<void>): Promise<MaintenanceResult>
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
 * If a write or sync fails, the outcome on disk is unknown (and Linux may have dropped the dirty pages),
 * so retrying could report success for data that is gone. Instead every waiting transaction is rejected
 * and the committer stays failed: the owner refuses writes until a restart recovers from the files.
 */
export class Committer {
  private queue: Pending[] = []
  private inFlight: Pending[] = []
  private checkpointWaiters: Waiter[] = []
  private loop: Promise<void> | undefined
  private failure: DatabaseError | undefined
  private last: Promise<void> = Promise.resolve()
  private durable = 0
  private flushCount = 0

  constructor(
    private sink: JournalSink,
    private readonly maintenance: Maintenance,
    private readonly onFatal: (err: DatabaseError) => void,
    durableSeq: number,
  ) {
    this.durable = durableSeq
  }

  get failed(): DatabaseError | undefined {
    return this.failure
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
    await this.sink.append([frameHeader(records), ...records])
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
      result = await this.maintenance.run(this.sink, (seq) => this.flushThrough(seq))
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

  private fail(err: unknown): void {
    const failure = new DatabaseError('DB_FAILED', `the journal could not be made durable; writes are refused until restart: ${String(err)}`, { cause: err })
    this.failure = failure
    for (const p of [...this.inFlight, ...this.queue]) p.reject(failure)
    for (const w of this.checkpointWaiters) w.reject(failure)
    this.inFlight = []
    this.queue = []
    this.checkpointWaiters = []
    this.onFatal(failure)
  }
}
