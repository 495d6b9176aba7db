import { mkdir } from 'node:fs/promises'
import { sleep } from '../core/backoff.js'
import { Checkpointer, DEFAULT_CHECKPOINT_BYTES, type SnapshotBuilder } from './checkpoint.js'
import { Committer } from './committer.js'
import type { Connection } from './connection.js'
import { diskFullError, type DiskFull } from './disk-full.js'
import { DatabaseError, asError } from './errors.js'
import { errorMessage } from '../core/errors.js'
import type { JournalSink } from './journal-file.js'
import { RecordBuilder, StatementNames, validateParams, type TxOps } from './journal-record.js'
import { acquireLock, type DirLock } from './lock.js'
import { applyMigrations } from './migrations.js'
import { dropSeed, isNewDatabase, saveTemplate, seedFromTemplate } from './fresh-template.js'
import { recover } from './recovery.js'
import { preview } from './sql-guard.js'
import { Transaction } from './transaction.js'
import { refusePromise } from './tx-guard.js'
import { WritableWaiters } from './writable-waiters.js'
import type { DatabaseStats, Migration, Row, SqlParams, Tx } from './types.js'
import { SQLITE_DIALECT, type Database as Engine, type DatabaseStatus, type Dialect } from './engine.js'

export type { Dialect, DatabaseStatus, EngineName } from './engine.js'
export type { DatabaseStats, Migration, Row, RunOptions, RunResult, SqlParams, SqlValue, Tx } from './types.js'
export { DatabaseError, type DatabaseErrorCode } from './errors.js'
export type { DiskFull } from './disk-full.js'

export interface DatabaseOptions {
  /** Folder for `snapshot.sqlite`, `journal` (and `journal.sealed` during a checkpoint) and `LOCK`; created if missing. */
  dir: string
  migrations: readonly Migration[]
  /** Journal size that triggers a checkpoint (default 64 MiB). */
  checkpointBytes?: number
  /**
   * Open even if the journal is damaged in the middle, by cutting it at the damage (the original is
   * copied aside). Transactions after the damage are lost, so this is an operator's decision.
   */
  repairCorruptJournal?: boolean
  /** Receives recovery and checkpoint events (torn tails cut, checkpoints, failures). */
  log?: (line: string) => void
  /** Decorates the journal file (fault injection in tests). */
  wrapJournal?: (sink: JournalSink) => JournalSink
  /** Replaces the worker that builds snapshots (fault injection in tests). */
  buildSnapshot?: SnapshotBuilder
  /**
   * A new database starts from this file when it exists, and writes it once migrated when it does not (see
   * fresh-template.ts). Only for `migrations` that never change under this path.
   */
  template?: string
}

/**
 * The member node's database: SQLite (sql.js, in memory) made durable by a logical redo journal.
 *
 * - `transaction(fn)` runs fn synchronously, in a SAVEPOINT of the tick's SQL transaction: every
 *   `transaction()` called before the tick is sealed (a setImmediate scheduled by the first) shares one
 *   BEGIN/COMMIT and one journal record, each function's write statements and bound values in order.
 *   At the seal the transaction commits, the record is queued for a group-committed append + fdatasync,
 *   and each function's promise resolves once that sync is done. Commit cost depends on the
 *   transactions, not on the size of the database.
 * - Now and then (journal over `checkpointBytes`, and on close) the journal is sealed and a fresh one
 *   started; a worker thread folds the sealed journal into a new snapshot, from the files, while commits
 *   go on. On open: load the snapshot, replay the sealed journal (if any) and the journal after it, cut
 *   a torn tail.
 * - Write SQL must be deterministic (see sql-guard.ts): replay must produce the same database.
 *
 * Reads see the connection's current state: transactions whose durability promise has not resolved
 * yet, and during a tick the writes of its functions that have returned (committed at the seal). That
 * is fine for one process: a crash loses them from memory and disk together, and nothing was promised
 * to anyone about them. What the node tells the outside world must wait for the promise.
 *
 * A full disk stalls the journal rather than failing it (see Committer): the transactions it holds
 * resolve once their record is written, and meanwhile (`diskFull`) every new `transaction()` is refused
 * at once with STORAGE_FULL, before its function runs; reads go on. `whenWritable()` tells a background
 * loop when to try again.
 */
export class SqlJsDatabase implements Engine {
  readonly dialect: Dialect = SQLITE_DIALECT
  private readonly committer: Committer
  private readonly checkpointer: Checkpointer
  private readonly names: StatementNames
  private tick: Tick | undefined
  private inTransaction = false
  private closing: Promise<void> | undefined
  private finalSizeBytes: number | undefined
  /** Woken when writes may be accepted again (the disk had room, or the database failed or closed). */
  private readonly writable = new WritableWaiters()

  private constructor(
    private readonly conn: Connection,
    private readonly lock: DirLock,
    private lastSeq: number,
    sink: JournalSink,
    snapshotSeq: number,
    sealedPending: boolean,
    names: readonly string[],
    opts: DatabaseOptions,
  ) {
    this.names = new StatementNames(names)
    const log = opts.log ?? (() => {})
    const wrap = opts.wrapJournal ?? ((s: JournalSink) => s)
    this.checkpointer = new Checkpointer(
      opts.dir,
      opts.checkpointBytes ?? DEFAULT_CHECKPOINT_BYTES,
      { sealForRotation: () => this.sealForRotation() },
      snapshotSeq,
      sealedPending,
      wrap,
      log,
      opts.buildSnapshot,
    )
    this.committer = new Committer(
      wrap(sink),
      this.checkpointer,
      {
        stalled: (full) =>
          log(
            `journal: the disk is full (${full.detail}); ${this.committer.pending} record(s) wait to be written and are retried ` +
              'until they are; new writes are refused meanwhile (STORAGE_FULL), reads go on',
          ),
        resumed: (full) => {
          log(`journal: written again; the disk was full from ${full.since}`)
          this.writable.wake()
        },
        failed: (err) => {
          log(err.message)
          this.writable.wake()
        },
      },
      lastSeq,
    )
  }

  static async open(opts: DatabaseOptions): Promise<SqlJsDatabase> {
    await mkdir(opts.dir, { recursive: true })
    const lock = await acquireLock(opts.dir)
    let db: SqlJsDatabase | undefined
    try {
      const log = opts.log ?? (() => {})
      const recoverOpts = { repairCorruptJournal: opts.repairCorruptJournal ?? false, log }
      const { template } = opts
      const isNew = template !== undefined && (await isNewDatabase(opts.dir))
      const seeded = isNew && (await seedFromTemplate(opts.dir, template))
      const rec = await recover(opts.dir, recoverOpts).catch(async (err: unknown) => {
        if (!seeded) throw err
        log(`database: the template ${template} could not be opened (${errorMessage(err)}); removed, migrating instead`)
        await dropSeed(opts.dir, template)
        return recover(opts.dir, recoverOpts)
      })
      if (rec.replayed > 0) log(`journal: replayed ${rec.replayed} transactions after snapshot ${rec.snapshotSeq}`)
      db = new SqlJsDatabase(rec.conn, lock, rec.lastSeq, rec.journal, rec.snapshotSeq, rec.sealedPending, rec.names, opts)
      const ran = await applyMigrations(db, opts.migrations)
      if (isNew && template !== undefined && ran.length === opts.migrations.length) await saveTemplate(template, rec.conn.export())
      return db
    } catch (err) {
      if (db) await db.close().catch(() => {})
      else await lock.release()
      throw err
    }
  }

  /**
   * Runs `fn` synchronously, right away. If it throws (or any statement in it fails) its effects roll
   * back, nothing of it is journaled, and only its promise rejects. Otherwise the promise resolves with
   * fn's result once the record holding it (and the rest of its tick) is durable. A transaction that
   * wrote nothing resolves once every earlier commit (whose data it may have read) is durable.
   */
  transaction<T>(fn: (tx: Tx) => T): Promise<T> {
    const refused = this.writeRefusal()
    if (refused) return Promise.reject(refused)
    // Bounds a record under a burst of large transactions; the next tick's BEGIN is cheap.
    if (this.tick && this.tick.record.byteLength >= TICK_RECORD_BYTES) this.sealTick()
    let tick: Tick
    try {
      tick = this.tick ?? this.openTick()
    } catch (err) {
      return Promise.reject(asError(err))
    }
    const ops = tick.record.begin()
    const tx = new Transaction(this.conn, ops)
    this.inTransaction = true
    let result: T
    try {
      this.conn.savepoint()
      try {
        result = fn(tx)
        refusePromise(result)
        if (tx.poisoned) throw tx.poisoned
        // Refused here, while only this function's savepoint has to roll back, rather than at the seal.
        tick.record.checkFits(ops)
        this.conn.release()
      } catch (err) {
        this.undo(tick, ops, err)
        throw err
      } finally {
        tx.end()
      }
    } catch (err) {
      return Promise.reject(err)
    } finally {
      this.inTransaction = false
    }
    tick.record.keep(ops)
    if (tick.record.opCount === 0) return this.committer.settled().then(() => result)
    // Also a function that only read after others wrote: it may have seen their writes.
    return new Promise<T>((resolve, reject) => tick.members.push({ resolve: () => resolve(result), reject }))
  }

  /**
   * Rows of a read (SELECT, VALUES, WITH without DML, EXPLAIN, pragma query). During a tick this
   * includes the writes of its transactions that have returned, which commit at the end of the tick.
   */
  all<R extends Row = Row>(sql: string, params?: SqlParams): R[] {
    return this.read(sql, params, Infinity) as R[]
  }

  get<R extends Row = Row>(sql: string, params?: SqlParams): R | undefined {
    return this.read(sql, params, 1)[0] as R | undefined
  }

  /**
   * Folds every transaction committed so far into a new snapshot (after pending commits are flushed);
   * resolves once the snapshot is durable. Commits go on meanwhile, into the next journal.
   */
  checkpoint(): Promise<void> {
    const refused = this.writeRefusal()
    return refused ? Promise.reject(refused) : this.foldAll()
  }

  /**
   * Seals the tick (its transactions still become durable), waits for pending commits, checkpoints
   * (unless the journal is empty or failed; a checkpoint already building is waited for) and closes.
   * Transactions a full disk holds get one last try, then reject with STORAGE_FULL (see stopWaitingForSpace).
   */
  close(): Promise<void> {
    // From inside a transaction function the tick cannot be sealed yet: shutdown waits for its seal.
    if (!this.closing && !this.inTransaction) this.sealTick()
    this.stopWaitingForSpace()
    this.closing ??= this.shutdown()
    this.writable.wake()
    return this.closing
  }

  /**
   * Since when, and why, the journal cannot be written for want of space; undefined while writes are
   * accepted. New transactions are refused (STORAGE_FULL) for as long as it is set.
   */
  get diskFull(): DiskFull | undefined {
    return this.committer.diskFull
  }

  get writesPaused(): boolean {
    return this.committer.diskFull !== undefined
  }

  /**
   * The pause before a background loop tries a failed write again: until there is room while the disk is full (a
   * backoff would only poll), otherwise the backoff's next delay.
   */
  beforeRetry(backoff: { next(): number }, signal?: AbortSignal): Promise<void> {
    return this.diskFull ? this.whenWritable(signal) : sleep(backoff.next(), signal)
  }

  /**
   * Resolves once writes may be accepted again: at once unless the disk is full, otherwise when the stalled
   * records are written (or the database fails or closes, so that a waiter sees that instead of waiting on),
   * or when `signal` aborts. Never rejects: the caller tries its write again and learns the outcome there.
   */
  whenWritable(signal?: AbortSignal): Promise<void> {
    if (!this.committer.diskFull || this.closing || signal?.aborted) return Promise.resolve()
    return this.writable.wait(signal)
  }

  /**
   * For shutdown: from now on a full disk is not waited out. Transactions it holds get one last try and then
   * reject with STORAGE_FULL (nobody was told they were stored), so the components stopping before the
   * database do not wait for space that may never come.
   */
  stopWaitingForSpace(): void {
    this.committer.stopWaitingForSpace()
  }

  stats(): DatabaseStats {
    const cp = this.checkpointer.last
    return {
      journalBytes: this.committer.journalBytes,
      lastSeq: this.lastSeq,
      durableSeq: this.committer.durableSeq,
      checkpoints: this.checkpointer.count,
      flushes: this.committer.flushes,
      pendingCommits: this.committer.pending,
      lastCheckpointMs: cp ? cp.durationMs : null,
      lastCheckpointExportMs: cp ? cp.exportMs : null,
      lastCheckpointBlockedMs: cp ? cp.blockedMs : null,
      lastSnapshotBytes: cp ? cp.snapshotBytes : null,
      databaseBytes: this.sizeBytes(),
    }
  }

  status(): DatabaseStatus {
    const failed = this.committer.failed
    return { engine: 'sqljs', healthy: failed === undefined && !this.closing, sizeBytes: this.sizeBytes(), ...(failed ? { detail: failed.message } : {}) }
  }

  /** The database's size now, or as it was at close: what stats() and status() report. */
  private sizeBytes(): number {
    return this.finalSizeBytes ?? this.conn.sizeBytes()
  }

  private openTick(): Tick {
    this.conn.begin()
    let close = (): void => {}
    const closed = new Promise<void>((resolve) => (close = resolve))
    const tick: Tick = { record: new RecordBuilder(this.names), members: [], closed, close }
    this.tick = tick
    // setImmediate rather than a microtask: transactions started by other I/O callbacks of this
    // event-loop turn (other HTTP requests, p2p messages) join the tick and share its COMMIT and record,
    // whereas a microtask would close it before any of them ran. Nothing awaits inside the tick, so
    // it stays open for one turn at most.
    setImmediate(() => {
      if (this.tick === tick) this.sealTick()
    })
    return tick
  }

  /**
   * Commits the tick's transaction and hands its record to the committer. Runs at the end of the
   * turn, before a checkpoint's export, at close, and when the record has grown large.
   */
  private sealTick(): void {
    const tick = this.tick
    if (!tick) return
    this.tick = undefined
    tick.close()
    const { record, members } = tick
    if (record.opCount === 0) {
      // Only reads, or functions that all failed; members wait only on ticks that wrote.
      try {
        this.conn.commit()
      } catch {
        this.conn.rollback()
      }
      return
    }
    let bytes: Buffer
    try {
      bytes = record.finish(this.lastSeq + 1)
      // Fails only for a deferred constraint (DEFERRABLE INITIALLY DEFERRED, PRAGMA defer_foreign_keys),
      // checked here for the tick as a whole: no member alone can be blamed, so all of them reject.
      this.conn.commit()
    } catch (err) {
      this.conn.rollback()
      const e = asError(err)
      for (const m of members) m.reject(e)
      return
    }
    // Only now may later records refer to the statements this one defines: it is next in the journal.
    record.adoptNames()
    this.lastSeq++
    this.committer.commit(this.lastSeq, bytes).then(
      () => {
        for (const m of members) m.resolve()
      },
      (err: Error) => {
        for (const m of members) m.reject(err)
      },
    )
  }

  /** Rolls back one failed function: its savepoint, its part of the record, and the names it defined. */
  private undo(tick: Tick, ops: TxOps, cause: unknown): void {
    tick.record.drop(ops)
    if (this.conn.rollbackSavepoint()) return
    // SQLite rolled back the whole tick (OR ROLLBACK, RAISE(ROLLBACK), out of memory), taking the other
    // functions' writes with it. Their ops are in the record: replaying them onto the state the tick
    // began from reproduces them exactly, as recovery would, so only the failed function is lost.
    try {
      this.conn.rollback()
      this.conn.begin()
      for (const op of tick.record.keptOps()) {
        if (op.kind === 'script') this.conn.script(op.sql)
        else this.conn.step(this.conn.prepare(op.sql), op.params)
      }
    } catch (err) {
      this.conn.rollback()
      this.tick = undefined
      tick.close()
      const lost = new DatabaseError(
        'DB_SQL',
        `rolled back: a later transaction of the same tick failed in a way that rolled back their shared SQL transaction ` +
          `(${asError(cause).message}), and replaying this one's statements failed: ${asError(err).message}`,
        { cause: err },
      )
      for (const m of tick.members) m.reject(lost)
    }
  }

  private async shutdown(): Promise<void> {
    try {
      if (this.tick) await this.tick.closed
      await this.committer.settled().catch(() => {})
      if (!this.committer.failed && this.lastSeq > this.checkpointer.snapshotSeq) {
        // Not fatal if it fails: the journals still hold everything and are replayed at the next open.
        await this.foldAll().catch(() => {})
      }
      // A build must not outlive the database: it reads the folder the lock is about to release.
      await this.checkpointer.idle()
      await this.committer.close()
    } finally {
      try {
        this.finalSizeBytes = this.conn.sizeBytes()
      } catch {
        this.finalSizeBytes = 0
      }
      this.conn.close()
      await this.lock.release()
    }
  }

  private read(sql: string, params: SqlParams | undefined, limit: number): Row[] {
    if (this.closing) throw new DatabaseError('DB_CLOSED', 'the database is closed')
    validateParams(params)
    const p = this.conn.prepare(sql)
    if (p.kind !== 'read') {
      throw new DatabaseError('DB_MISUSE', `writes go through transaction() so they are journaled (use tx inside one): ${preview(sql)}`)
    }
    return this.conn.query(p, params, limit)
  }

  private writeRefusal(): Error | undefined {
    if (this.closing) return new DatabaseError('DB_CLOSED', 'the database is closed')
    if (this.committer.failed) return this.committer.failed
    // Refused before fn runs, whether it would write or not: nothing half-done, and a read-only transaction
    // would only wait for the stalled records anyway.
    const full = this.committer.diskFull
    if (full) return diskFullError(full)
    if (this.inTransaction) return new DatabaseError('DB_MISUSE', 'transaction() called inside a transaction function')
    return undefined
  }

  /**
   * Checkpoint steps until the snapshot holds every transaction committed before the call: a build
   * already running folds only the journal sealed before it, and a sealed journal left by a failed
   * build is folded before the journal can be rotated again.
   */
  private async foldAll(): Promise<void> {
    // The open tick is sealed by the rotation, so it is included too.
    const target = this.lastSeq + (this.tick && this.tick.record.opCount > 0 ? 1 : 0)
    for (;;) {
      await this.checkpointer.idle()
      if (this.checkpointer.snapshotSeq >= target && !this.checkpointer.sealedPending) return
      const before = this.checkpointer.snapshotSeq
      await this.committer.checkpoint()
      // Nothing left to fold (only reads since): the rotation did nothing.
      if (this.checkpointer.snapshotSeq === before && !this.checkpointer.sealedPending) return
    }
  }

  /**
   * Called by the checkpointer between transactions (its loop never runs inside a synchronous fn). The
   * tick's transaction is sealed first: its record names statements by the closing journal's
   * dictionary, so it goes there. Records sealed from now on start a new dictionary, and the first of
   * them opens with a "forget" op, which keeps it right in the old file if the rotation fails.
   */
  private sealForRotation(): number {
    this.sealTick()
    this.names.reset()
    return this.lastSeq
  }
}

/**
 * What the node sees of either engine (engine.ts); `Database.open` opens the sql.js one, the default, as it always
 * has. openDatabase (open.ts) chooses by the member's config.
 */
export type Database = Engine
export const Database = SqlJsDatabase

/** Past this, the next transaction starts a new tick: one record, and one SQL transaction, stay bounded. */
const TICK_RECORD_BYTES = 16 * 1024 * 1024

/** The SQL transaction and journal record shared by the transactions of one event-loop turn. */
interface Tick {
  record: RecordBuilder
  /** Transactions that settle with the record (those that wrote, and reads after a write). */
  members: { resolve(): void; reject(err: Error): void }[]
  /** Resolves once the tick is sealed or abandoned (a close() from inside a function waits for it). */
  closed: Promise<void>
  close(): void
}
