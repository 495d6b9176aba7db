import { join } from 'node:path'
import { writeFileAtomic } from '../core/atomic-file.js'
import { JournalFile, type JournalSink } from './journal-file.js'
import type { Maintenance, MaintenanceResult } from './committer.js'

export const SNAPSHOT_FILE = 'snapshot.sqlite'
export const SNAPSHOT_TMP_FILE = 'snapshot.tmp'
export const DEFAULT_CHECKPOINT_BYTES = 64 * 1024 * 1024

export interface SnapshotSource {
  /**
   * Records the last committed sequence number inside the database and returns its bytes. Runs
   * synchronously between transactions, so the bytes hold exactly the transactions up to that number.
   * It seals a tick's open transaction first; records sealed from then on belong to the next journal.
   */
  exportSnapshot(): { bytes: Uint8Array; seq: number }
}

/** What the last successful checkpoint cost, for the stats. */
export interface CheckpointCost {
  /** From the export to the new journal being in place. */
  durationMs: number
  /** The export alone: the part that blocks the event loop. */
  exportMs: number
  snapshotBytes: number
}

/**
 * Folds the journal into a snapshot so that the journal (and the replay at open) stays bounded.
 * Crash-safe at every step, because the journal is replaced only once the snapshot is durable, and
 * replay skips records the snapshot already includes:
 *   1. export; write snapshot.tmp; fsync        crash: old snapshot + full journal
 *   2. rename to snapshot.sqlite; fsync dir     crash: either snapshot + full journal
 *   3. write journal.tmp (header); fsync; rename over journal; fsync dir
 *                                               crash: new snapshot + old or empty journal
 * Transactions committed after the export wait in the committer's queue and go to the new journal.
 */
export class Checkpointer implements Maintenance {
  private completed = 0
  private lastCost: CheckpointCost | undefined
  private nextDueAt: number
  private included: number

  constructor(
    private readonly dir: string,
    private readonly thresholdBytes: number,
    private readonly source: SnapshotSource,
    snapshotSeq: number,
    private readonly wrap: (sink: JournalSink) => JournalSink,
    private readonly log: (line: string) => void,
  ) {
    this.nextDueAt = thresholdBytes
    this.included = snapshotSeq
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

  due(sink: JournalSink): boolean {
    return sink.size >= this.nextDueAt
  }

  async run(sink: JournalSink): Promise<MaintenanceResult> {
    let seq: number
    const start = performance.now()
    let exportMs: number
    let snapshotBytes: number
    try {
      const snap = this.source.exportSnapshot()
      exportMs = performance.now() - start
      seq = snap.seq
      snapshotBytes = snap.bytes.length
      this.log(`checkpoint: begin seq=${seq} snapshot=${snap.bytes.length}B journal=${sink.size}B`)
      await writeFileAtomic(join(this.dir, SNAPSHOT_FILE), snap.bytes, { tmp: join(this.dir, SNAPSHOT_TMP_FILE) })
    } catch (err) {
      // Nothing depends on the failed snapshot; retry once the journal has grown by another threshold.
      this.nextDueAt = sink.size + this.thresholdBytes
      this.log(`checkpoint: snapshot failed, keeping the journal: ${String(err)}`)
      return { ok: false, fatal: false, error: err instanceof Error ? err : new Error(String(err)) }
    }
    this.included = seq
    let fresh: JournalSink
    try {
      fresh = this.wrap(await JournalFile.createEmpty(this.dir))
    } catch (err) {
      // The rename over the journal may or may not have happened: the old handle may point at an
      // unlinked file, so further appends could be lost. Only a restart knows what is on disk.
      return { ok: false, fatal: true, error: err instanceof Error ? err : new Error(String(err)) }
    }
    await sink.close().catch((err: unknown) => this.log(`checkpoint: closing the old journal: ${String(err)}`))
    this.completed++
    this.nextDueAt = this.thresholdBytes
    this.lastCost = { durationMs: performance.now() - start, exportMs, snapshotBytes }
    this.log(`checkpoint: done seq=${seq}`)
    return { ok: true, sink: fresh, coveredSeq: seq }
  }
}
