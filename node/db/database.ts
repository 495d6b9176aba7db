import { mkdir } from 'node:fs/promises'
import { Checkpointer, DEFAULT_CHECKPOINT_BYTES } from './checkpoint.js'
import { Committer } from './committer.js'
import type { Connection } from './connection.js'
import { DatabaseError } from './errors.js'
import type { JournalSink } from './journal-file.js'
import { RecordBuilder, validateParams } from './journal-record.js'
import { acquireLock, type DirLock } from './lock.js'
import { applyMigrations } from './migrations.js'
import { markSnapshotSeq, recover } from './recovery.js'
import { preview } from './sql-guard.js'
import { Transaction } from './transaction.js'
import type { DatabaseStats, Migration, Row, SqlParams, Tx } from './types.js'

export type { DatabaseStats, Migration, Row, RunResult, SqlParams, SqlValue, Tx } from './types.js'
export { DatabaseError, type DatabaseErrorCode } from './errors.js'

export interface DatabaseOptions {
  /** Folder for `snapshot.sqlite`, `journal` and `LOCK`; created if missing. */
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
}

/**
 * The member node's database: SQLite (sql.js, in memory) made durable by a logical redo journal.
 *
 * - `transaction(fn)` runs fn synchronously between BEGIN and COMMIT. Each write statement and its
 *   bound values go into the transaction's journal record; after COMMIT the record is queued for a
 *   group-committed append + fdatasync, and the returned promise resolves once that sync is done.
 *   Commit cost depends on the transaction, not on the size of the database.
 * - Now and then (journal over `checkpointBytes`, and on close) the database is exported to a snapshot
 *   and the journal starts afresh. On open: load the snapshot, replay the journal after it, cut a torn tail.
 * - Write SQL must be deterministic (see sql-guard.ts): replay must produce the same database.
 *
 * Reads see committed state, which may include transactions whose durability promise has not resolved
 * yet. That is fine for one process: a crash loses them from memory and disk together, and nothing
 * was promised to anyone about them. What the node tells the outside world must wait for the promise.
 */
export class Database {
  private readonly committer: Committer
  private readonly checkpointer: Checkpointer
  private inTransaction = false
  private closing: Promise<void> | undefined

  private constructor(
    private readonly conn: Connection,
    private readonly lock: DirLock,
    private lastSeq: number,
    sink: JournalSink,
    snapshotSeq: number,
    opts: DatabaseOptions,
  ) {
    const log = opts.log ?? (() => {})
    const wrap = opts.wrapJournal ?? ((s: JournalSink) => s)
    this.checkpointer = new Checkpointer(
      opts.dir,
      opts.checkpointBytes ?? DEFAULT_CHECKPOINT_BYTES,
      { exportSnapshot: () => this.exportSnapshot() },
      snapshotSeq,
      wrap,
      log,
    )
    this.committer = new Committer(wrap(sink), this.checkpointer, (err) => log(err.message), lastSeq)
  }

  static async open(opts: DatabaseOptions): Promise<Database> {
    await mkdir(opts.dir, { recursive: true })
    const lock = await acquireLock(opts.dir)
    let db: Database | undefined
    try {
      const log = opts.log ?? (() => {})
      const rec = await recover(opts.dir, { repairCorruptJournal: opts.repairCorruptJournal ?? false, log })
      if (rec.replayed > 0) log(`journal: replayed ${rec.replayed} transactions after snapshot ${rec.snapshotSeq}`)
      db = new Database(rec.conn, lock, rec.lastSeq, rec.journal, rec.snapshotSeq, opts)
      await applyMigrations(db, opts.migrations)
      return db
    } catch (err) {
      if (db) await db.close().catch(() => {})
      else await lock.release()
      throw err
    }
  }

  /**
   * Runs `fn` synchronously inside BEGIN/COMMIT. If it throws (or any statement in it fails) the
   * transaction rolls back, nothing is journaled, and the promise rejects. Otherwise the promise
   * resolves with fn's result once the commit is durable. A transaction that wrote nothing resolves
   * once every earlier commit (whose data it may have read) is durable.
   */
  transaction<T>(fn: (tx: Tx) => T): Promise<T> {
    const refused = this.writeRefusal()
    if (refused) return Promise.reject(refused)
    const record = new RecordBuilder()
    const tx = new Transaction(this.conn, record)
    this.inTransaction = true
    let result: T
    let sealed: Buffer | undefined
    try {
      this.conn.begin()
      try {
        result = fn(tx)
        if (isThenable(result)) {
          // Its remainder will fail on the ended tx; nobody else is listening, so absorb that here
          // rather than let it become an unhandled rejection that stops the process.
          result.then(undefined, () => {})
          throw new DatabaseError('DB_MISUSE', 'the transaction function returned a promise; it must be synchronous (await before or after, not inside)')
        }
        if (tx.poisoned) throw tx.poisoned
        // Sealed before COMMIT: a record that cannot be journaled (too large) rolls the transaction back
        // instead of leaving it committed in memory with nothing on disk.
        if (record.opCount > 0) sealed = record.finish(this.lastSeq + 1)
        this.conn.commit()
      } catch (err) {
        this.conn.rollback()
        throw err
      } finally {
        tx.end()
      }
    } catch (err) {
      return Promise.reject(err)
    } finally {
      this.inTransaction = false
    }
    if (!sealed) return this.committer.settled().then(() => result)
    this.lastSeq++
    return this.committer.commit(this.lastSeq, sealed).then(() => result)
  }

  /** Rows of a read (SELECT, VALUES, WITH without DML, EXPLAIN, pragma query): committed state. */
  all<R extends Row = Row>(sql: string, params?: SqlParams): R[] {
    return this.read(sql, params, Infinity) as R[]
  }

  get<R extends Row = Row>(sql: string, params?: SqlParams): R | undefined {
    return this.read(sql, params, 1)[0] as R | undefined
  }

  /** Folds the journal into a new snapshot now (after pending commits are flushed). */
  checkpoint(): Promise<void> {
    const refused = this.writeRefusal()
    return refused ? Promise.reject(refused) : this.committer.checkpoint()
  }

  /** Waits for pending commits, checkpoints (unless the journal is empty or failed) and closes. */
  close(): Promise<void> {
    this.closing ??= this.shutdown()
    return this.closing
  }

  stats(): DatabaseStats {
    return {
      journalBytes: this.committer.journalBytes,
      lastSeq: this.lastSeq,
      durableSeq: this.committer.durableSeq,
      checkpoints: this.checkpointer.count,
      flushes: this.committer.flushes,
      pendingCommits: this.committer.pending,
    }
  }

  private async shutdown(): Promise<void> {
    try {
      await this.committer.settled().catch(() => {})
      if (!this.committer.failed && this.lastSeq > this.checkpointer.snapshotSeq) {
        // Not fatal if it fails: the journal still holds everything and is replayed at the next open.
        await this.committer.checkpoint().catch(() => {})
      }
      await this.committer.close()
    } finally {
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

  private writeRefusal(): DatabaseError | undefined {
    if (this.closing) return new DatabaseError('DB_CLOSED', 'the database is closed')
    if (this.committer.failed) return this.committer.failed
    if (this.inTransaction) return new DatabaseError('DB_MISUSE', 'transaction() called inside a transaction function')
    return undefined
  }

  /** Called by the checkpointer between transactions (its loop never runs inside a synchronous fn). */
  private exportSnapshot(): { bytes: Uint8Array; seq: number } {
    const seq = this.lastSeq
    markSnapshotSeq(this.conn, seq)
    return { bytes: this.conn.export(), seq }
  }
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function'
}
