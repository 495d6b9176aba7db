import { sleep } from '../../core/backoff.js'
import { POSTGRES_DIALECT, type Database, type DatabaseStatus, type Dialect } from '../engine.js'
import { DatabaseError, asError } from '../errors.js'
import { validateParams } from '../journal-record.js'
import { applyMigrations } from '../migrations.js'
import { preview } from '../sql-guard.js'
import type { DatabaseStats, Migration, Row, SqlParams, Tx } from '../types.js'
import type { BridgeReply, BridgeTiming, Step } from './bridge-protocol.js'
import { DEFAULT_TIMING, redact, SyncBridge, type BridgeHealth, type StatementTally } from './bridge.js'
import { PgTransaction, type PgRunner } from './pg-transaction.js'
import { DeferredSteps, type DeferredMark } from './pg-deferred.js'
import { InsertRows } from './insert-rows.js'
import { committed, noteGroups } from './pg-commit.js'
import { serverVersionRefusal } from './server-version.js'
import { BEGIN, COMMIT, READ_RELEASE, READ_ROLLBACK, READ_SAVEPOINT, RELEASE, ROLLBACK, ROLLBACK_TO, SAVEPOINT, type PgTick } from './pg-tick.js'
import { errorOf, PgStatements, stepOf, unavailableOf } from './statements.js'
import { refusePromise } from '../tx-guard.js'
import { WritableWaiters } from '../writable-waiters.js'

export interface PgDatabaseOptions {
  /** postgres://user:password@host:port/dbname: a database this member owns alone; it must exist. */
  url: string
  migrations: readonly Migration[]
  log?: (line: string) => void
  /** The bridge's limits (DEFAULT_TIMING in bridge.ts unless given): tests lower them to see a hung server in seconds. */
  timing?: Partial<BridgeTiming>
}

export { MIN_SERVER_VERSION, serverVersionRefusal } from './server-version.js'

/** How long a read of the database's size is reused (pg_database_size walks the database's files). */
const SIZE_TTL_MS = 5000

type Ok = Extract<BridgeReply, { ok: true }>

/**
 * The member's database on PostgreSQL, with the same synchronous API and the same turn semantics as the sql.js engine:
 * the first `transaction()` of an event-loop turn opens the SQL transaction (BEGIN), each function runs in its own
 * SAVEPOINT (one that throws or fails rolls back alone), and one COMMIT per turn, sealed with setImmediate, makes them
 * durable together (synchronous_commit on); each function's promise resolves only once that COMMIT returned. Reads see
 * the turn's writes (one connection). BEGIN, SAVEPOINT and RELEASE are deferred and go with the next statement, so a
 * function that runs no statement costs no round trip. Writes queued with tx.write go with the function's next
 * statement; those left when the function returns are deferred as a group (pg-deferred.ts), in a savepoint of its own
 * when the function sent nothing, else in the one its statements opened, sent with the turn's next round trip or its
 * COMMIT, where a failing group rolls back alone and fails its function's promise. The COMMIT is posted without
 * waiting: the event loop goes on, and the next statement runs after it.
 *
 * A connection lost (PostgreSQL stopped or unreachable) fails what was in flight with DB_UNAVAILABLE, COMMITs whose
 * outcome is unknown included (never told durable); new transactions are refused at once until the worker has
 * reconnected, which it does by itself with a backoff; `whenWritable` wakes background loops then.
 */
export class PgDatabase implements Database, PgRunner {
  readonly dialect: Dialect = POSTGRES_DIALECT
  readonly statements = new PgStatements()
  private readonly where: string
  private tick: PgTick | undefined
  /** The turn's single-row inserts, merged into multi-row ones as they go to the server (coalesce.ts). */
  private readonly rows = new InsertRows()
  private readonly deferred = new DeferredSteps(this.rows)
  private inTransaction = false
  private closing: Promise<void> | undefined
  /** Resolves once every COMMIT posted so far has returned (never rejects). */
  private settled: Promise<void> = Promise.resolve()
  private commits = 0
  private durable = 0
  private size: { bytes: number; at: number } = { bytes: 0, at: -Infinity }
  private readonly writable = new WritableWaiters()
  /** A stopping node does not wait for the server to come back. */
  private stopping = false
  private readonly log: (line: string) => void
  private bridge!: SyncBridge
  /** While migrations run at open: statements have no deadline (a table rebuilt on a large database takes its time). */
  private migrating = false

  private constructor(url: string, log: (line: string) => void) {
    this.where = redact(url)
    this.log = log
  }

  static async open(opts: PgDatabaseOptions): Promise<PgDatabase> {
    const db = new PgDatabase(opts.url, opts.log ?? (() => {}))
    db.bridge = await SyncBridge.start(opts.url, (h) => db.healthChanged(h), { ...DEFAULT_TIMING, ...opts.timing })
    try {
      const v = db.get<{ n: number; v: string }>("SELECT current_setting('server_version_num')::int AS n, current_setting('server_version') AS v")
      const refused = v ? serverVersionRefusal(v.n, v.v, db.where) : undefined
      if (refused) throw refused
      db.migrating = true
      await applyMigrations(db, opts.migrations)
      db.migrating = false
      db.loadIdentityColumns()
      db.loadLinkedTables()
      return db
    } catch (err) {
      await db.close().catch(() => {})
      throw err
    }
  }

  transaction<T>(fn: (tx: Tx) => T): Promise<T> {
    const refused = this.writeRefusal()
    if (refused) return Promise.reject(refused)
    const tick = this.tick ?? this.openTick()
    if (tick.broken) return Promise.reject(tick.broken)
    // Every function runs in its savepoint, the turn's first writer too: a failure, found while the function runs or
    // in its writes sent after it returned, rolls back that function alone. Deferred: a function that runs nothing
    // costs nothing, and the SAVEPOINT goes with its first statement.
    const mark = this.deferred.mark()
    this.deferred.push(SAVEPOINT)
    tick.savepointPending = true
    const tx = new PgTransaction(this)
    this.inTransaction = true
    let result: T
    let group: number | undefined
    try {
      result = fn(tx)
      refusePromise(result)
      if (tx.poisoned) throw tx.poisoned
      if (this.deferred.onlyQueuedSince(mark)) {
        // Only queued writes, nothing sent: they wait for the turn's next round trip, in a group of their own.
        group = this.deferred.group(mark)
        tick.savepointPending = false
      } else if (this.deferred.sentSince(mark) && this.deferred.queued > 0) {
        // Writes queued after its last statement (all deferred steps are its own, since its statements took the
        // rest): a group too, inside the savepoint its statements opened on the server, so that nobody waits for them
        // (a pass's confirmations and events, say). Should one fail, the worker rolls back to that savepoint, the
        // whole function, whose promise then rejects at the COMMIT.
        group = this.deferred.tail()
      } else this.endSavepoint(tick, RELEASE)
    } catch (err) {
      const e = tx.poisoned instanceof DatabaseError && tx.poisoned.code === 'DB_UNAVAILABLE' ? tx.poisoned : asError(err)
      if (e.code === 'DB_UNAVAILABLE') this.breakTick(tick, e)
      else if (!this.deferred.sentSince(mark)) this.unsent(tick, mark)
      else this.endSavepoint(tick, ROLLBACK_TO)
      return Promise.reject(err)
    } finally {
      tx.end()
      this.inTransaction = false
    }
    tick.wrote ||= tx.wrote
    if (!tick.wrote) return this.settled.then(() => result)
    return new Promise<T>((resolve, reject) => tick.members.push({ resolve: () => resolve(result), reject, group }))
  }

  all<R extends Row = Row>(sql: string, params?: SqlParams): R[] {
    return this.read(sql, params, Infinity) as R[]
  }

  get<R extends Row = Row>(sql: string, params?: SqlParams): R | undefined {
    return this.read(sql, params, 1)[0] as R | undefined
  }

  /** PostgreSQL keeps its own files; what a checkpoint promises (everything so far durable) holds once COMMITs have returned. */
  checkpoint(): Promise<void> {
    if (this.closing) return Promise.reject(new DatabaseError('DB_CLOSED', 'the database is closed'))
    if (!this.inTransaction) this.sealTick()
    return this.settled
  }

  close(): Promise<void> {
    if (!this.closing && !this.inTransaction) this.sealTick()
    this.closing ??= this.shutdown()
    this.writable.wake()
    return this.closing
  }

  /** PostgreSQL manages its own disk; a full one fails statements (DB_SQL) rather than stalling a journal. */
  get diskFull(): undefined {
    return undefined
  }

  /** While the server is away: writes are refused at once, and whenWritable waits for the worker to reconnect. */
  get writesPaused(): boolean {
    return !this.bridge.status.up && !this.closing
  }

  whenWritable(signal?: AbortSignal): Promise<void> {
    // A turn the connection broke refuses every transaction until it ends: a loop retrying at once must leave it.
    if (this.tick?.broken) return new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.whenWritable(signal))
    if (this.bridge.status.up || this.closing || this.stopping || signal?.aborted) return Promise.resolve()
    return this.writable.wait(signal)
  }

  beforeRetry(backoff: { next(): number }, signal?: AbortSignal): Promise<void> {
    return this.bridge.status.up ? sleep(backoff.next(), signal) : this.whenWritable(signal)
  }

  /** For shutdown: background loops waiting for the server stop waiting, now and from now on. */
  stopWaitingForSpace(): void {
    this.stopping = true
    this.writable.wake()
  }

  stats(): DatabaseStats {
    return {
      journalBytes: 0,
      lastSeq: this.commits,
      durableSeq: this.durable,
      checkpoints: 0,
      flushes: this.durable,
      pendingCommits: this.commits - this.durable,
      lastCheckpointMs: null,
      lastCheckpointExportMs: null,
      lastCheckpointBlockedMs: null,
      lastSnapshotBytes: null,
      databaseBytes: this.sizeBytes(),
      statements: this.bridge.statements,
      roundTrips: this.bridge.roundTrips,
    }
  }

  /**
   * Statements and round trips by statement text since the first call (which starts the count), the costliest first
   * (for scripts/bench).
   */
  statementTally(): StatementTally[] {
    this.bridge.trackStatements()
    return [...this.bridge.tally!.values()].map((t) => ({ ...t })).sort((a, b) => b.statements - a.statements)
  }

  status(): DatabaseStatus {
    const h = this.bridge.status
    return { engine: 'postgres', healthy: h.up && !this.closing, sizeBytes: this.sizeBytes(), ...(h.up ? {} : { detail: `${this.where}: ${h.detail}`, since: h.since }) }
  }

  roundTrip(steps: Step[], sql: string | undefined, read: boolean): Ok {
    const tick = this.tick
    if (tick?.broken) throw tick.broken
    // A read before anything of the turn is on the server (queued writes included) sees the same without opening the
    // transaction (a function that only reads costs one round trip).
    const reply = this.bridge.call(read && tick && !tick.sent && this.deferred.queued === 0 ? steps : this.flush(steps), this.migrating)
    if (tick) noteGroups(tick, reply, this.where)
    if (reply.ok) return reply
    throw errorOf(reply.failure, this.where, sql)
  }

  queue(step: Step): void {
    if (this.tick?.broken) throw this.tick.broken
    this.deferred.queue(step)
  }

  private read(sql: string, params: SqlParams | undefined, limit: number): Row[] {
    if (this.closing) throw new DatabaseError('DB_CLOSED', 'the database is closed')
    validateParams(params)
    const p = this.statements.get(sql)
    if (p.kind !== 'read') throw new DatabaseError('DB_MISUSE', `writes go through transaction() (use tx inside one): ${preview(sql)}`)
    const step = stepOf(p, params)
    const tick = this.tick
    let reply: BridgeReply
    if (!tick || (!tick.sent && this.deferred.queued === 0)) {
      // Nothing of the turn is on the server yet: the read sees the same without opening its transaction.
      reply = this.bridge.call([step])
    } else {
      if (tick.broken) throw tick.broken
      // Inside the turn's transaction, a failed read must not abort it for the turn's other functions.
      try {
        reply = this.bridge.call(this.flush([READ_SAVEPOINT, step]))
        noteGroups(tick, reply, this.where)
      } catch (err) {
        // Given up on (no answer in time): where the turn's transaction stands is unknown, so it fails whole.
        this.breakTick(tick, asError(err))
        throw err
      }
      if (reply.ok) this.deferred.push(READ_RELEASE)
      else if (reply.failure.unavailable) this.breakTick(tick, unavailableOf(reply.failure, this.where))
      else this.deferred.push(READ_ROLLBACK)
    }
    if (!reply.ok) throw errorOf(reply.failure, this.where, sql)
    const rows = reply.rows as Row[]
    return rows.length > limit ? rows.slice(0, limit) : rows
  }

  /** The deferred steps, then `steps`; the turn's BEGIN and the function's SAVEPOINT are on the server from now on. */
  private flush(steps: Step[]): Step[] {
    if (this.tick) {
      this.tick.sent = true
      this.tick.savepointPending = false
    }
    return this.deferred.take(steps)
  }

  /**
   * A function failed before anything of it was sent: what it deferred (its SAVEPOINT, its queued writes) is dropped
   * unsent, and the server never saw it.
   */
  private unsent(tick: PgTick, mark: DeferredMark): void {
    if (tick.broken) return
    this.deferred.dropSince(mark)
    tick.savepointPending = false
  }

  /** Closes a function's savepoint: dropped unsent when nothing ran in it, else RELEASE or ROLLBACK TO, deferred. */
  private endSavepoint(tick: PgTick, end: Step): void {
    if (tick.broken) return
    if (tick.savepointPending) {
      this.deferred.pop()
      tick.savepointPending = false
      return
    }
    // Rolled back: what the function queued since its last statement was never sent, and never will be.
    if (end === ROLLBACK_TO) this.deferred.drop()
    this.deferred.push(end)
  }

  private openTick(): PgTick {
    const tick: PgTick = { members: [], sent: false, savepointPending: false, wrote: false }
    this.tick = tick
    this.deferred.push(BEGIN)
    // As on sql.js: transactions from every I/O callback of this turn join the tick and share its COMMIT.
    setImmediate(() => {
      if (this.tick === tick) this.sealTick()
    })
    return tick
  }

  private sealTick(): void {
    const tick = this.tick
    if (!tick) return
    this.tick = undefined
    if (tick.broken) {
      this.deferred.drop()
      // Ends what is left of the transaction on the server, if the connection survived, and lets the worker take new ones.
      void this.bridge.send([ROLLBACK]).catch(() => {})
      for (const m of tick.members) m.reject(tick.broken)
      return
    }
    if (!tick.sent && this.deferred.queued === 0) {
      this.deferred.drop()
      const members = tick.members
      void this.settled.then(() => {
        for (const m of members) m.resolve()
      })
      return
    }
    if (!tick.wrote) {
      // Only reads went to the server: nothing to make durable, nobody waits on it.
      void this.bridge.send(this.flush([ROLLBACK])).catch(() => {})
      return
    }
    const steps = this.flush([COMMIT])
    this.commits++
    const done = this.bridge.send(steps).then(
      (reply) => {
        if (committed(tick, reply, this.where)) this.durable++
      },
      (err: unknown) => {
        for (const m of tick.members) m.reject(asError(err))
      },
    )
    this.settled = this.settled.then(() => done)
  }

  /** The connection was lost inside the turn: its transaction is gone, every function of it fails. */
  private breakTick(tick: PgTick, err: DatabaseError): void {
    tick.broken ??= err
    this.deferred.drop()
  }

  private writeRefusal(): Error | undefined {
    if (this.closing) return new DatabaseError('DB_CLOSED', 'the database is closed')
    if (this.inTransaction) return new DatabaseError('DB_MISUSE', 'transaction() called inside a transaction function')
    const h = this.bridge.status
    if (!h.up) return new DatabaseError('DB_UNAVAILABLE', `the database ${this.where} is unavailable since ${h.since}: ${h.detail}; reconnecting`)
    return undefined
  }

  private sizeBytes(): number {
    const now = performance.now()
    if (now - this.size.at < SIZE_TTL_MS || !this.bridge.status.up || this.closing) return this.size.bytes
    this.size.at = now
    try {
      const r = this.read('SELECT pg_database_size(current_database()) AS b', undefined, 1)[0]
      if (typeof r?.['b'] === 'number') this.size.bytes = r['b']
    } catch {
      // Shown as last read; /status says whether the database is reachable.
    }
    return this.size.bytes
  }

  private loadIdentityColumns(): void {
    const rows = this.all<{ t: string; c: string }>("SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() AND is_identity = 'YES'")
    this.statements.identity = new Map(rows.map((r) => [r.t, r.c]))
  }

  /** Tables whose inserts are never merged (insert-rows.ts): those with a trigger, and both sides of a foreign key. */
  private loadLinkedTables(): void {
    const rows = this.all<{ t: string }>(
      `SELECT event_object_table AS t FROM information_schema.triggers WHERE trigger_schema = current_schema()
       UNION SELECT c.relname AS t FROM pg_constraint k JOIN pg_class c ON c.oid IN (k.conrelid, k.confrelid)
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE k.contype = 'f' AND n.nspname = current_schema()`,
    )
    this.rows.setLinked(rows.map((r) => r.t))
  }

  private healthChanged(h: BridgeHealth): void {
    if (h.up) {
      this.log(`database: connected again to ${this.where}`)
      this.writable.wake()
    } else this.log(`database: lost ${this.where} (${h.detail}); writes are refused (503) and reads fail until it is back; reconnecting`)
  }

  private async shutdown(): Promise<void> {
    // A close() from inside a transaction function: its turn is sealed by its setImmediate.
    while (this.tick) await new Promise((resolve) => setImmediate(resolve))
    await this.settled
    await this.bridge.close()
  }
}
