import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads'
import { workerBoot } from '../../core/worker-boot.js'
import { DatabaseError } from '../errors.js'
import type { BridgeReply, BridgeRequest, BridgeWorkerData, SessionControl, SessionReport, Step } from './bridge-protocol.js'

/** How long the event loop sleeps on one statement before it gives up on the worker: past the server's own timeout. */
const SYNC_WAIT_MS = 60_000
/** The server cancels a statement that runs longer (statement_timeout), well before SYNC_WAIT_MS. */
const STATEMENT_TIMEOUT_MS = 30_000
/** Workers kept for the next database opened in this process: starting one (loading pg) takes most of a second. */
const IDLE_WORKERS = 2
/** How long a closing session may take to end its connection before its worker is stopped instead of kept. */
const CLOSE_WAIT_MS = 5_000

export interface BridgeHealth {
  up: boolean
  detail: string
  since: string
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
 */
export class SyncBridge {
  private readonly session = ++sessions
  private readonly pending = new Map<number, (reply: BridgeReply) => void>()
  private health: BridgeHealth = { up: false, detail: 'connecting', since: new Date().toISOString() }
  private ended: string | undefined
  private closing: Promise<void> | undefined
  private onClosed: (() => void) | undefined
  /** Until the first connection: the process must not exit for want of other work while it waits. */
  private starting = true
  private firstReport: ((up: boolean) => void) | undefined
  /** Statements posted (each step's, transaction control included), and the posts the event loop waited for. */
  statements = 0
  roundTrips = 0

  private constructor(
    private readonly thread: BridgeThread,
    private readonly onHealth: (h: BridgeHealth) => void,
  ) {
    thread.onReport = (m) => this.report(m)
    thread.onDeath = (why) => this.gone(why)
    this.hold()
  }

  /** Starts a session on an idle worker (or a new one); resolves once connected, or rejects with the first failure. */
  static async start(url: string, onHealth: (h: BridgeHealth) => void): Promise<SyncBridge> {
    const thread = idle.pop() ?? new BridgeThread()
    const bridge = new SyncBridge(thread, onHealth)
    const up = new Promise<boolean>((resolve) => (bridge.firstReport = resolve))
    const open: SessionControl = { kind: 'open', session: bridge.session, url, statementTimeoutMs: STATEMENT_TIMEOUT_MS }
    thread.syncPort.postMessage(open)
    const connected = await up
    bridge.starting = false
    bridge.hold()
    if (!connected) {
      const why = bridge.ended ?? bridge.health.detail
      await bridge.close()
      throw new DatabaseError('DB_UNAVAILABLE', `cannot connect to the database ${redact(url)}: ${why}`)
    }
    return bridge
  }

  get status(): BridgeHealth {
    return this.health
  }

  /** Runs `steps` in order and returns the last one's result; blocks the event loop until then. */
  call(steps: Step[]): BridgeReply {
    if (this.ended) throw new DatabaseError('DB_UNAVAILABLE', this.ended)
    const { flag, syncPort } = this.thread
    const id = ++requests
    const req: BridgeRequest = { id, sync: true, steps }
    this.count(steps)
    this.roundTrips++
    syncPort.postMessage(req)
    const deadline = performance.now() + SYNC_WAIT_MS
    for (;;) {
      const got = receiveMessageOnPort(syncPort)
      if (got) {
        const reply = got.message as BridgeReply
        // An answer to a request given up on earlier.
        if (reply.id !== id) continue
        // Known now, while the event loop is still in this turn: the worker's report of it comes as a message later.
        if (!reply.ok && reply.failure.unavailable) this.down(reply.failure.message)
        return reply
      }
      const left = deadline - performance.now()
      if (left <= 0 || this.thread.dead) throw new DatabaseError('DB_UNAVAILABLE', this.thread.dead ?? `the database did not answer within ${SYNC_WAIT_MS / 1000} s`)
      Atomics.wait(flag, 0, 0, left)
      // Lowered before the port is read: a reply posted after this raises it again (the worker posts, then raises).
      Atomics.store(flag, 0, 0)
    }
  }

  /** Runs `steps` in order after everything posted before; resolves with the last one's result. */
  send(steps: Step[]): Promise<BridgeReply> {
    if (this.ended) return Promise.reject(new DatabaseError('DB_UNAVAILABLE', this.ended))
    const id = ++requests
    const req: BridgeRequest = { id, sync: false, steps }
    this.count(steps)
    const reply = new Promise<BridgeReply>((resolve) => this.pending.set(id, resolve))
    this.thread.syncPort.postMessage(req)
    this.hold()
    return reply
  }

  private count(steps: Step[]): void {
    for (const s of steps) this.statements += s.values === undefined ? s.text.split(';').length : 1
  }

  /** Ends the session (its connection closed); the worker is kept for the next one, or stopped. */
  close(): Promise<void> {
    this.closing ??= this.end()
    return this.closing
  }

  private async end(): Promise<void> {
    this.ended ??= 'the database is closed'
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
    if (clean && !thread.dead && idle.length < IDLE_WORKERS) {
      thread.hold(false)
      idle.push(thread)
    } else await thread.worker.terminate()
  }

  private report(m: BridgeReply | SessionReport): void {
    if ('kind' in m) {
      if (m.session !== this.session) return
      if (m.kind === 'closed') return this.onClosed?.()
      if (this.firstReport) {
        // Not yet connected: a first failure is the start's answer, not a change of health.
        const first = this.firstReport
        this.firstReport = undefined
        this.health = { up: m.up, detail: m.detail, since: new Date().toISOString() }
        return first(m.up)
      }
      if (m.up !== this.health.up || m.detail !== this.health.detail) {
        this.health = { up: m.up, detail: m.detail, since: m.up !== this.health.up ? new Date().toISOString() : this.health.since }
        this.onHealth(this.health)
      }
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

  private down(why: string): void {
    if (!this.health.up) return
    this.health = { up: false, detail: why, since: new Date().toISOString() }
    this.onHealth(this.health)
  }

  private gone(why: string): void {
    this.ended ??= why
    this.health = { up: false, detail: why, since: new Date().toISOString() }
    const lost = (id: number): BridgeReply => ({ id, ok: false, failure: { message: why, unavailable: true } })
    for (const [id, done] of this.pending) done(lost(id))
    this.pending.clear()
    this.onClosed?.()
    this.firstReport?.(false)
  }
}

/** The URL without its password, for messages and logs. */
export function redact(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return '(an unparsable URL)'
  }
}
