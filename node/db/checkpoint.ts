import { rm, stat, statfs } from 'node:fs/promises'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { workerBoot } from '../core/worker-boot.js'
import { fsyncDir } from '../core/atomic-file.js'
import { Backoff } from '../core/backoff.js'
import { errorMessage } from '../core/errors.js'
import { isDiskFull } from './disk-full.js'
import { JournalFile, SEALED_JOURNAL_FILE, SNAPSHOT_FILE, type JournalSink } from './journal-file.js'
import type { Maintenance, MaintenanceResult, Persist } from './committer.js'
import type { BuiltSnapshot } from './snapshot-build.js'
import type { WorkerReport } from './snapshot-worker.js'

export const DEFAULT_CHECKPOINT_BYTES = 64 * 1024 * 1024
/**
 * A checkpoint that failed for want of space is tried again after this long, doubling: it needs room for a
 * whole new snapshot, which a disk that was just full rarely has at once, and a build costs seconds of CPU.
 */
const DISK_FULL_RETRY_MIN_MS = 2000
const DISK_FULL_RETRY_MAX_MS = 60_000

export interface CheckpointHost {
  /**
   * Seals the open tick (its record still belongs to the journal being closed), then starts a new
   * statement dictionary for the records sealed from now on, and returns the last sequence number
   * committed. Runs synchronously between transactions.
   */
  sealForRotation(): number
}

/** What the last successful checkpoint cost, for the stats. */
export interface CheckpointCost {
  /** From sealing the tick to the sealed journal being removed (mostly the worker's build). */
  durationMs: number
  /** The export on the main thread: none since snapshots are built by the worker. */
  exportMs: number
  /** What the main thread spent in the checkpoint's synchronous parts (seal, worker start, bookkeeping). */
  blockedMs: number
  snapshotBytes: number
}

/** Builds the snapshot in a worker thread. Tests replace it (to make a build fail or wait). */
export type SnapshotBuilder = (dir: string, started: () => void) => Promise<BuiltSnapshot>

/**
 * Folds the journal into a snapshot so that the journal (and the replay at open) stays bounded, without
 * exporting the live database: the main thread only closes the journal; a worker thread rebuilds the
 * snapshot from the files. The steps, and what a crash after each leaves:
 *   1. seal the tick, flush          old snapshot + journal
 *   2. rotate: journal → journal.sealed, empty journal in its place (fsync dir after each rename)
 *                                    old snapshot + sealed + (empty) journal: recovery replays both
 *   3. worker: old snapshot + sealed records → snapshot.tmp, fsync, rename, fsync dir
 *                                    new snapshot (its snapshot_seq covers the sealed records) + sealed
 *                                    + journal: replay skips the sealed records
 *   4. remove journal.sealed, fsync dir
 * Commits go on during 3 and 4, into the new journal. A build that fails (worker crash, out of memory,
 * disk full) loses nothing: the sealed journal stays, is replayed at the next open, and the next
 * checkpoint folds it before it rotates again. Only one sealed journal exists at a time.
 *
 * A failure is logged once per distinct reason. One for want of space (a rotation that could not write
 * `journal.tmp`, a build that could not write `snapshot.tmp`) is tried again with a time backoff
 * (2 s doubling to 1 min), a build only once the file system has room for the files it folds; any other
 * failure once the journal has grown by another threshold, since time alone would not change it.
 */
export class Checkpointer implements Maintenance {
  private completed = 0
  private lastCost: CheckpointCost | undefined
  private nextDueAt: number
  private included: number
  private sealed: boolean
  /** Where the journal must have grown to before a failed build is retried automatically; -1: not set yet. */
  private retryAt = 0
  /** After a failure for want of space: no checkpoint step before this time (ms since the epoch). */
  private notBefore = 0
  private readonly diskFullPace = new Backoff(DISK_FULL_RETRY_MIN_MS, DISK_FULL_RETRY_MAX_MS)
  /** Why the last checkpoint step failed, if it did: the same reason is not logged again. */
  private problem: string | undefined
  /** The last build failed for want of space: the next one waits until the disk has room for it. */
  private buildNeedsRoom = false
  private building: Promise<void> | undefined

  constructor(
    private readonly dir: string,
    private readonly thresholdBytes: number,
    private readonly host: CheckpointHost,
    snapshotSeq: number,
    sealedPending: boolean,
    private readonly wrap: (sink: JournalSink) => JournalSink,
    private readonly log: (line: string) => void,
    private readonly builder: SnapshotBuilder = buildInWorker,
  ) {
    this.nextDueAt = thresholdBytes
    this.included = snapshotSeq
    this.sealed = sealedPending
  }

  get count(): number {
    return this.completed
  }

  get last(): CheckpointCost | undefined {
    return this.lastCost
  }

  /** The last sequence number the snapshot on disk includes. */
  get snapshotSeq(): number {
    return this.included
  }

  /** Whether a sealed journal waits to be folded (a failed build, or one interrupted by a restart). */
  get sealedPending(): boolean {
    return this.sealed
  }

  /** Resolves once no build is running (whatever its outcome). */
  idle(): Promise<void> {
    return this.building ?? Promise.resolve()
  }

  due(sink: JournalSink): boolean {
    if (this.building || Date.now() < this.notBefore) return false
    if (this.sealed) {
      if (this.retryAt < 0) this.retryAt = sink.size + this.thresholdBytes
      return sink.size >= this.retryAt
    }
    return sink.size >= this.nextDueAt
  }

  /**
   * Runs in the committer's loop with no write in flight; returns once the main thread's part is done
   * (the build goes on in the background: `build` settles when it ends). `flushThrough` writes the
   * queued records up to a sequence number to the current journal.
   */
  async run(sink: JournalSink, flushThrough: (seq: number) => Promise<void>, persist: Persist): Promise<MaintenanceResult> {
    if (this.building) return { ok: true, sink, build: this.building }
    // The sealed journal's name is taken until it is folded: retry that first, then rotate next time.
    if (this.sealed) {
      const room = await this.roomToFold()
      if (room) return { ok: false, fatal: false, error: room }
      return { ok: true, sink, build: this.startBuild(performance.now(), 0, this.included) }
    }

    const start = performance.now()
    const seq = this.host.sealForRotation()
    const blockedMs = performance.now() - start
    if (seq <= this.included) return { ok: true, sink, build: Promise.resolve() }
    this.log(`checkpoint: begin seq=${seq} journal=${sink.size}B`)
    // The tick just sealed names statements by this file's dictionary: it must be written here.
    await flushThrough(seq)

    let renamed = false
    let fresh: JournalSink
    try {
      fresh = this.wrap(await JournalFile.rotate(this.dir, () => (renamed = true), persist))
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err))
      // Moved but not replaced (and not for want of space, which `persist` waits out): the old handle now
      // appends to the sealed file, and whether the renames reached the disk is unknown. Only a restart knows.
      if (renamed) return { ok: false, fatal: true, error }
      // Nothing moved: carry on with this journal (records sealed meanwhile start by forgetting the
      // old dictionary, so they are right in it) and retry later.
      this.failed(err, `checkpoint: could not rotate the journal, keeping it: ${error.message}`)
      if (!isDiskFull(err)) this.nextDueAt = sink.size + this.thresholdBytes
      return { ok: false, fatal: false, error }
    }
    await sink.close().catch((err: unknown) => this.log(`checkpoint: closing the old journal: ${String(err)}`))
    this.sealed = true
    this.nextDueAt = this.thresholdBytes
    this.log(`checkpoint: rotated seq=${seq}; ${SEALED_JOURNAL_FILE} is being folded into the snapshot`)
    return { ok: true, sink: fresh, build: this.startBuild(start, blockedMs, seq) }
  }

  private startBuild(start: number, blockedSoFar: number, seq: number): Promise<void> {
    const build = this.fold(start, blockedSoFar, seq)
    const tracked = build.then(
      () => undefined,
      () => undefined,
    )
    this.building = tracked
    void tracked.then(() => {
      if (this.building === tracked) this.building = undefined
    })
    return build
  }

  /**
   * After a build failed for want of space: an error (the step is put off) unless the file system now has
   * room for what the build writes, at least the snapshot and the sealed records it folds in. A cheap statfs
   * instead of seconds of replay and export that would fail the same way.
   */
  private async roomToFold(): Promise<Error | undefined> {
    if (!this.buildNeedsRoom) return undefined
    try {
      const fs = await statfs(this.dir)
      const free = fs.bavail * fs.bsize
      const sizeOf = async (name: string): Promise<number> => (await stat(join(this.dir, name)).catch(() => ({ size: 0 }))).size
      const needed = (await sizeOf(SNAPSHOT_FILE)) + (await sizeOf(SEALED_JOURNAL_FILE))
      if (free >= needed) return undefined
      this.notBefore = Date.now() + this.diskFullPace.next()
      return new Error(`checkpoint: put off, the disk has ${free} bytes free and the new snapshot needs about ${needed}`)
    } catch {
      // No statfs here: try the build, which says what is wrong.
      return undefined
    }
  }

  /** Logs a failed step once per distinct reason, and paces its retry when it failed for want of space. */
  private failed(err: unknown, line: string): void {
    if (isDiskFull(err)) this.notBefore = Date.now() + this.diskFullPace.next()
    const reason = errorMessage(err)
    if (reason !== this.problem) this.log(line)
    this.problem = reason
  }

  private succeeded(): void {
    this.problem = undefined
    this.buildNeedsRoom = false
    this.notBefore = 0
    this.diskFullPace.reset()
  }

  private async fold(start: number, blockedSoFar: number, seq: number): Promise<void> {
    let blockedMs = blockedSoFar
    let built: BuiltSnapshot
    try {
      const t = performance.now()
      const running = this.builder(this.dir, () => this.log('checkpoint: worker started'))
      blockedMs += performance.now() - t
      built = await running
    } catch (err) {
      const message = errorMessage(err)
      this.failed(
        err,
        `checkpoint: building the snapshot failed, keeping ${SEALED_JOURNAL_FILE} (replayed at the next open; ` +
          `the next checkpoint retries it): ${message}`,
      )
      this.buildNeedsRoom = isDiskFull(err)
      this.retryAt = this.buildNeedsRoom ? 0 : -1
      throw err instanceof Error ? err : new Error(message)
    }
    const t = performance.now()
    this.included = Math.max(this.included, built.seq)
    if (built.replayed > 0) {
      this.log(
        `checkpoint: snapshot renamed seq=${built.seq} snapshot=${built.snapshotBytes}B ` +
          `(worker: ${Math.round(built.buildMs)} ms, of which export ${Math.round(built.exportMs)} ms)`,
      )
    } else {
      this.log(`checkpoint: the snapshot already holds ${SEALED_JOURNAL_FILE} (seq=${built.seq})`)
    }
    blockedMs += performance.now() - t
    // Once the snapshot holds the sealed records, the file is redundant; if removing it fails that is
    // harmless (replay skips what the snapshot includes) and the next checkpoint removes it.
    try {
      await rm(join(this.dir, SEALED_JOURNAL_FILE), { force: true })
      await fsyncDir(this.dir)
      this.sealed = false
      this.retryAt = 0
    } catch (err) {
      this.log(`checkpoint: removing ${SEALED_JOURNAL_FILE}: ${String(err)}`)
      this.retryAt = -1
      throw err
    }
    this.log('checkpoint: old journal removed')
    this.succeeded()
    this.completed++
    this.lastCost = { durationMs: performance.now() - start, exportMs: 0, blockedMs, snapshotBytes: built.snapshotBytes }
    this.log(`checkpoint: done seq=${Math.max(seq, built.seq)}`)
  }
}

/**
 * Starts the worker thread. A node run from its build (network/build.ts) finds the compiled worker beside its own
 * bundle; one run from the sources (tests, `npm run node`) loads the TypeScript entry through tsx's loader,
 * registered inside the worker.
 */
function buildInWorker(dir: string, started: () => void): Promise<BuiltSnapshot> {
  const worker = new Worker(workerBoot('snapshot-worker', new URL('./snapshot-worker.ts', import.meta.url)), { eval: true, workerData: { dir } })
  return new Promise<BuiltSnapshot>((resolve, reject) => {
    let settled = false
    const settle = (f: () => void): void => {
      if (settled) return
      settled = true
      f()
    }
    worker.once('online', started)
    worker.on('message', (m: WorkerReport) => {
      if (m.kind === 'done') settle(() => resolve(m.result))
      // The errno travels along: a build that failed for want of space is retried differently.
      else settle(() => reject(Object.assign(new Error(`checkpoint worker: ${m.message}`), m.code ? { code: m.code } : {})))
    })
    worker.once('error', (err) => settle(() => reject(new Error(`checkpoint worker crashed: ${err.message}`, { cause: err }))))
    worker.once('exit', (code) => settle(() => reject(new Error(`checkpoint worker exited (code ${code}) without a result`))))
  })
}
