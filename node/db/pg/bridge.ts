import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads'
import { workerBoot } from '../../core/worker-boot.js'
import { DatabaseError } from '../errors.js'
import type { BridgeReply, BridgeRequest, BridgeTiming, BridgeWorkerData, SessionControl, SessionReport, Step } from './bridge-protocol.js'
import type { Backend } from './member-lock.js'

/**
 * The bridge's limits unless PgDatabaseOptions.timing says otherwise. The server cancels a statement past its timeout
 * (answered as unavailable, 503); a request unanswered past `answerTimeoutMs` (a hung server, a partition) costs its
 * connection, and the event loop sleeps at most that long (plus ANSWER_GRACE_MS) once: from then on the bridge refuses
 * at once until the worker answers again.
 */
export const DEFAULT_TIMING: BridgeTiming = { statementTimeoutMs: 20_000, answerTimeoutMs: 25_000, connectTimeoutMs: 10_000, keepAliveDelayMs: 10_000, lockWaitMs: 30_000 }
/** The event loop waits this much past the worker's own deadline, which the worker meets unless it is itself stuck. */
const ANSWER_GRACE_MS = 2_000
/** While a request is given up on, how often the event loop looks for its late answer. */
const STALL_POLL_MS = 100
/** Workers kept for the next database opened in this process: starting one (loading pg) takes most of a second. */
const IDLE_WORKERS = 2
/** How long a closing session may take to end its connection before its worker is stopped instead of kept. */
const CLOSE_WAIT_MS = 5_000

export interface BridgeHealth {
  up: boolean
  detail: string
  since: string
}

/** What one statement text cost since the session opened: `roundTrips` counts the waits it ended (it came last). */
export interface StatementTally {
  sql: string
  statements: number
  roundTrips: number
}

/** A worker thread and the channels to it; serves one SyncBridge (a session) at a time. */
class BridgeThread {
  readonly flag = new Int32Array(new SharedArrayBuffer(4))
  readonly syncPort: MessagePort
  readonly asyncPort: MessagePort
  readonly worker: Worker
  /** Why the thread can no longer serve, once it cannot. */
  dead: string | undefined
  /** Where its async messages go: the session it serves. */
  onReport: (m: BridgeReply | SessionReport) => void = () => {}
  onDeath: (why: string) => void = () => {}

  constructor() {
    const sync = new MessageChannel()
    const async = new MessageChannel()
    this.syncPort = sync.port1
    this.asyncPort = async.port1
    const data: BridgeWorkerData = { flag: this.flag.buffer as SharedArrayBuffer, syncPort: sync.port2, asyncPort: async.port2 }
    this.worker = new Worker(workerBoot('pg-bridge-worker', new URL('./bridge-worker.ts', import.meta.url)), { eval: true, workerData: data, transferList: [sync.port2, async.port2] })
    this.asyncPort.on('message', (m: BridgeReply | SessionReport) => this.onReport(m))
    const die = (why: string): void => {
      this.dead ??= why
      this.onDeath(this.dead)
    }
    this.worker.on('error', (err) => die(`the database worker thread failed: ${err.message}`))
    this.worker.on('exit', (code) => die(`the database worker thread exited (${code})`))
  }

  /** Whether the process may exit while this thread waits: only when nothing is awaited from it. */
  hold(busy: boolean): void {
    if (busy) {
      this.worker.ref()
      this.asyncPort.ref()
    } else {
      this.worker.unref()
      this.asyncPort.unref()
    }
  }
}

const idle: BridgeThread[] = []
let sessions = 0
let requests = 0

/**
 * The synchronous face of an asynchronous pg connection: `call` posts statements to the worker thread that owns the
 * connection and sleeps (Atomics.wait) until it answers, so that repositories keep their synchronous API. `send` posts
 * without waiting (a COMMIT, whose fsync the event loop need not sit through). Requests run in the order posted,
 * whichever kind, on one connection.
 *
 * A request the worker does not answer in time is given up on: health goes down and every request is refused at once
 * (DB_UNAVAILABLE) until its late answer arrives. A worker thread that dies is replaced by a new one, which reconnects.
 */
export class SyncBridge {
  private readonly session = ++sessions
  private readonly pending = new Map<number, (reply: BridgeReply) => void>()
  /** What the bridge shows: the worker's health, or down while a request is given up on. */
  private health: BridgeHealth = { up: false, detail: 'connecting', since: new Date().toISOString() }
  /** What the worker last said of its connection. */
  private workerHealth: { up: boolean; detail: string } = { up: false, detail: 'connecting' }
  /** The sync request given up on, while its answer has not come. */
  private stalled: { id: number; at: number; timer: NodeJS.Timeout } | undefined
  private ended: string | undefined
  private closing: Promise<void> | undefined
  private onClosed: (() => void) | undefined
  /** Until the first connection: the process must not exit for want of other work while it waits. */
  private starting = true
  private firstReport: ((up: boolean) => void) | undefined
  /**
   * Why the database is another process's: at the start, the refusal; once started (taken while this process was
   * disconnected), every request is refused so, and a new worker never opens it again.
   */
  private lockedBy: string | undefined
  /** The server process that last held the member lock, for a worker that takes the session over (bridge-protocol.ts). */
  private held: Backend | undefined
  /** Statements posted (each step's, transaction control included), and the posts the event loop waited for. */
  statements = 0
  roundTrips = 0
  /**
   * The same counts by statement text (prepared name, or the text itself): what a role costs, for scripts/bench. Kept
   * only once `trackStatements` asked for it, so that the hot path pays no lookup per statement otherwise.
   */
  tally: Map<string, StatementTally> | undefined

  private constructor(
    private thread: BridgeThread,
    private readonly url: string,
    private readonly timing: BridgeTiming,
    private readonly onHealth: (h: BridgeHealth) => void,
  ) {
    this.adopt(thread)
  }

  /** Starts a session on an idle worker (or a new one); resolves once connected, or rejects with the first failure. */
  static async start(url: string, onHealth: (h: BridgeHealth) => void, timing: BridgeTiming = DEFAULT_TIMING): Promise<SyncBridge> {
    const bridge = new SyncBridge(idle.pop() ?? new BridgeThread(), url, timing, onHealth)
    const up = new Promise<boolean>((resolve) => (bridge.firstReport = resolve))
    bridge.open()
    const connected = await up
    bridge.starting = false
    bridge.hold()
    if (!connected) {
      const why = bridge.ended ?? bridge.health.detail
      await bridge.close()
      if (bridge.lockedBy !== undefined) throw new DatabaseError('DB_LOCKED', `the database ${redact(url)} is in use: ${why}`)
      throw new DatabaseError('DB_UNAVAILABLE', `cannot connect to the database ${redact(url)}: ${why}`)
    }
    return bridge
  }

  get status(): BridgeHealth {
    if (this.stalled) this.drain()
    return this.health
  }

  /**
   * Runs `steps` in order and returns the last one's result; blocks the event loop until then, at most the answer
   * timeout (`unbounded`: no limit, for migrations).
   */
  call(steps: Step[], unbounded = false): BridgeReply {
    this.refuse()
    const { flag, syncPort } = this.thread
    const id = ++requests
    const req: BridgeRequest = { id, sync: true, steps, ...(unbounded ? { unbounded } : {}) }
    this.count(steps)
    this.roundTrips++
    const last = steps[steps.length - 1]
    if (last && this.tally) this.tallyOf(this.tally, last).roundTrips++
    syncPort.postMessage(req)
    const waitMs = unbounded ? Infinity : this.timing.answerTimeoutMs + ANSWER_GRACE_MS
    const deadline = performance.now() + waitMs
    for (;;) {
      const got = receiveMessageOnPort(syncPort)
      if (got) {
        const reply = got.message as BridgeReply
        // An answer to a request given up on earlier.
        if (reply.id !== id) continue
        // Known now, while the event loop is still in this turn: the worker's report of it comes as a message later.
        if (!reply.ok && reply.failure.lost) this.workerSays(false, reply.failure.message)
        return reply
      }
      if (this.thread.dead) throw this.unavailable(this.thread.dead)
      const left = deadline - performance.now()
      if (left <= 0) {
        this.stall(id)
        throw this.unavailable(this.stalledDetail())
      }
      Atomics.wait(flag, 0, 0, Number.isFinite(left) ? left : undefined)
      // Lowered before the port is read: a reply posted after this raises it again (the worker posts, then raises).
      Atomics.store(flag, 0, 0)
    }
  }

  /** Runs `steps` in order after everything posted before; resolves with the last one's result. */
  send(steps: Step[]): Promise<BridgeReply> {
    try {
      this.refuse()
    } catch (err) {
      return Promise.reject(err)
    }
    const id = ++requests
    const req: BridgeRequest = { id, sync: false, steps }
    this.count(steps)
    const reply = new Promise<BridgeReply>((resolve) => this.pending.set(id, resolve))
    this.thread.syncPort.postMessage(req)
    this.hold()
    return reply
  }

  private refuse(): void {
    if (this.ended) throw this.unavailable(this.ended)
    if (this.lockedBy !== undefined) throw this.unavailable(this.lockedBy)
    if (this.stalled) this.drain()
    if (this.stalled) throw this.unavailable(this.stalledDetail())
  }

  private unavailable(why: string): DatabaseError {
    return new DatabaseError('DB_UNAVAILABLE', `the database ${redact(this.url)} is unavailable: ${why}`)
  }

  private stalledDetail(): string {
    return `the database did not answer within ${(this.timing.answerTimeoutMs + ANSWER_GRACE_MS) / 1000} s; waiting for its worker`
  }

  /** Gives up on request `id`: refuse everything until its answer comes, or replace the worker if it never does. */
  private stall(id: number): void {
    const timer = setInterval(() => {
      this.drain()
      const s = this.stalled
      if (s && performance.now() - s.at > this.timing.answerTimeoutMs + ANSWER_GRACE_MS) this.replace('the database worker thread stopped answering')
    }, STALL_POLL_MS).unref()
    this.stalled = { id, at: performance.now(), timer }
    this.publish()
  }

  /** Reads late answers off the sync port; the one given up on ends the stall. */
  private drain(): void {
    const s = this.stalled
    if (!s) return
    for (let got = receiveMessageOnPort(this.thread.syncPort); got; got = receiveMessageOnPort(this.thread.syncPort)) {
      const reply = got.message as BridgeReply
      if (!reply.ok && reply.failure.lost) this.workerHealth = { up: false, detail: reply.failure.message }
      if (reply.id === s.id) this.unstall()
    }
  }

  private unstall(): void {
    if (!this.stalled) return
    clearInterval(this.stalled.timer)
    this.stalled = undefined
    this.publish()
  }

  private count(steps: Step[]): void {
    for (const s of steps) {
      const n = s.values === undefined ? s.text.split(';').length : 1
      this.statements += n
      if (this.tally) this.tallyOf(this.tally, s).statements += n
    }
  }

  /** Counts by statement text from now on (see `tally`). */
  trackStatements(): void {
    this.tally ??= new Map()
  }

  private tallyOf(tally: Map<string, StatementTally>, s: Step): StatementTally {
    // Unnamed texts by their head: a caller building SQL per call must not grow this without bound.
    const key = s.name ?? s.text.slice(0, 90)
    let t = tally.get(key)
    if (t === undefined) tally.set(key, (t = { sql: s.text.replace(/\s+/g, ' ').slice(0, 90), statements: 0, roundTrips: 0 }))
    return t
  }

  /** Ends the session (its connection closed); the worker is kept for the next one, or stopped. */
  close(): Promise<void> {
    this.closing ??= this.end()
    return this.closing
  }

  private async end(): Promise<void> {
    this.ended ??= 'the database is closed'
    if (this.stalled) clearInterval(this.stalled.timer)
    const { thread } = this
    if (thread.dead) return
    const closed = new Promise<boolean>((resolve) => {
      this.onClosed = () => resolve(true)
      setTimeout(() => resolve(false), CLOSE_WAIT_MS).unref()
    })
    const close: SessionControl = { kind: 'close', session: this.session }
    thread.syncPort.postMessage(close)
    thread.hold(true)
    const clean = await closed
    thread.onReport = () => {}
    thread.onDeath = () => {}
    // A worker given up on may still be busy with the old request: it is not kept.
    if (clean && !thread.dead && !this.stalled && idle.length < IDLE_WORKERS) {
      thread.hold(false)
      idle.push(thread)
    } else await thread.worker.terminate()
  }

  private adopt(thread: BridgeThread): void {
    this.thread = thread
    thread.onReport = (m) => this.report(m)
    thread.onDeath = (why) => this.gone(why)
    this.hold()
  }

  private open(): void {
    const open: SessionControl = { kind: 'open', session: this.session, url: this.url, timing: this.timing, pid: process.pid, held: this.held }
    this.thread.syncPort.postMessage(open)
  }

  private report(m: BridgeReply | SessionReport): void {
    if ('kind' in m) {
      if (m.session !== this.session) return
      if (m.kind === 'closed') return this.onClosed?.()
      if (m.backend !== undefined) this.held = m.backend
      if (m.locked === true) this.lockedBy = m.detail
      if (this.firstReport) {
        // Not yet connected: a first failure is the start's answer, not a change of health.
        const first = this.firstReport
        this.firstReport = undefined
        this.workerHealth = { up: m.up, detail: m.detail }
        this.health = { up: m.up, detail: m.detail, since: new Date().toISOString() }
        return first(m.up)
      }
      if (this.stalled) this.drain()
      this.workerSays(m.up, m.detail)
      return
    }
    const done = this.pending.get(m.id)
    if (!done) return
    this.pending.delete(m.id)
    this.hold()
    done(m)
  }

  /** Keeps the process alive while an answer is awaited, and only then: an idle member stops when its work does. */
  private hold(): void {
    this.thread.hold(this.pending.size > 0 || this.starting)
  }

  private workerSays(up: boolean, detail: string): void {
    this.workerHealth = { up, detail }
    this.publish()
  }

  /** Shows the health the worker reports, or down while a request is given up on; tells onHealth of a change. */
  private publish(): void {
    const next = this.stalled ? { up: false, detail: this.stalledDetail() } : this.workerHealth
    if (next.up === this.health.up && next.detail === this.health.detail) return
    this.health = { ...next, since: next.up !== this.health.up ? new Date().toISOString() : this.health.since }
    if (!this.firstReport && !this.ended) this.onHealth(this.health)
  }

  private failPending(why: string): void {
    const lost = (id: number): BridgeReply => ({ id, ok: false, failure: { message: why, unavailable: true, lost: true } })
    for (const [id, done] of this.pending) done(lost(id))
    this.pending.clear()
  }

  private gone(why: string): void {
    if (this.ended || this.firstReport) {
      this.ended ??= why
      this.health = { up: false, detail: why, since: new Date().toISOString() }
      this.failPending(why)
      this.onClosed?.()
      this.firstReport?.(false)
      return
    }
    this.replace(why)
  }

  /**
   * The worker died or stopped answering: what was in flight fails as unavailable (its outcome unknown), and a new
   * worker opens the session again; health is down until it has connected.
   */
  private replace(why: string): void {
    const old = this.thread
    old.onReport = () => {}
    old.onDeath = () => {}
    void old.worker.terminate()
    if (this.stalled) clearInterval(this.stalled.timer)
    this.stalled = undefined
    this.failPending(why)
    this.workerSays(false, this.lockedBy ?? why)
    this.adopt(new BridgeThread())
    // Taken over by another process: a new worker must not take the database back.
    if (this.lockedBy === undefined) this.open()
  }
}

/** The URL without its password, for messages and logs. */
export function redact(url: string): string {
  try {
    const u = new URL(url)
    // No authority (its scheme left out: `user:secret@host`): whatever precedes an `@` may be a password.
    if (u.host === '' && url.includes('@')) return '(an unparsable URL)'
    // An `@` the parse did not take as the credentials' end (`u:12/ss@host`: host u, port 12): part of a password.
    if (u.username === '' && u.password === '' && url.includes('@')) return '(an unparsable URL)'
    if (u.password) u.password = '***'
    // pg takes a password from the query string too; the rest of the query is kept as written.
    u.search = u.search.replace(/([?&]password=)[^&]*/g, '$1***')
    return u.toString()
  } catch {
    return '(an unparsable URL)'
  }
}
