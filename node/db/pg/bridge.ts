import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads'
import { workerBoot } from '../../core/worker-boot.js'
import { DatabaseError } from '../errors.js'
import type { BridgeReply, BridgeRequest, BridgeWorkerData, HealthReport, Step } from './bridge-protocol.js'

/** How long the event loop sleeps on one statement before it gives up on the worker: past the server's own timeout. */
const SYNC_WAIT_MS = 60_000
/** The server cancels a statement that runs longer (statement_timeout), well before SYNC_WAIT_MS. */
const STATEMENT_TIMEOUT_MS = 30_000

export interface BridgeHealth {
  up: boolean
  detail: string
  since: string
}

/**
 * The synchronous face of an asynchronous pg connection: `call` posts statements to the worker thread that owns the
 * connection and sleeps (Atomics.wait) until it answers, so that repositories keep their synchronous API. `send` posts
 * without waiting (a COMMIT, whose fsync the event loop need not sit through). Requests run in the order posted,
 * whichever kind, on one connection.
 */
export class SyncBridge {
  private readonly flag: Int32Array
  private nextId = 1
  private readonly pending = new Map<number, (reply: BridgeReply) => void>()
  private health: BridgeHealth = { up: false, detail: 'connecting', since: new Date().toISOString() }
  private exited: string | undefined
  /** Until the first connection: the process must not exit for want of other work while it waits. */
  private starting = true

  private constructor(
    private readonly worker: Worker,
    flag: SharedArrayBuffer,
    private readonly syncPort: MessagePort,
    private readonly asyncPort: MessagePort,
    private readonly onHealth: (h: BridgeHealth) => void,
  ) {
    this.flag = new Int32Array(flag)
    asyncPort.on('message', (m: BridgeReply | HealthReport) => {
      if ('kind' in m) {
        if (m.up !== this.health.up || m.detail !== this.health.detail) {
          const changed = m.up !== this.health.up
          this.health = { up: m.up, detail: m.detail, since: changed ? new Date().toISOString() : this.health.since }
          this.onHealth(this.health)
        }
        return
      }
      const done = this.pending.get(m.id)
      this.pending.delete(m.id)
      this.holdOpen()
      done?.(m)
    })
    worker.on('error', (err) => this.gone(`the database worker thread failed: ${err.message}`))
    worker.on('exit', (code) => this.gone(`the database worker thread exited (${code})`))
    this.holdOpen()
  }

  /** Starts the worker; resolves once it has connected, or rejects with the first connection failure. */
  static async start(url: string, onHealth: (h: BridgeHealth) => void): Promise<SyncBridge> {
    const flag = new SharedArrayBuffer(4)
    const sync = new MessageChannel()
    const async = new MessageChannel()
    const data: BridgeWorkerData = { url, flag, syncPort: sync.port2, asyncPort: async.port2, statementTimeoutMs: STATEMENT_TIMEOUT_MS }
    const worker = new Worker(workerBoot('pg-bridge-worker', new URL('./bridge-worker.ts', import.meta.url)), {
      eval: true,
      workerData: data,
      transferList: [sync.port2, async.port2],
    })
    let first: ((h: BridgeHealth) => void) | undefined
    const firstReport = new Promise<BridgeHealth>((resolve) => (first = resolve))
    const bridge = new SyncBridge(worker, flag, sync.port1, async.port1, (h) => {
      if (first) {
        first(h)
        first = undefined
      } else onHealth(h)
    })
    const h = await Promise.race([firstReport, new Promise<BridgeHealth>((resolve) => worker.once('exit', () => resolve({ up: false, detail: bridge.exited ?? 'the worker exited', since: '' })))])
    bridge.starting = false
    bridge.holdOpen()
    if (!h.up) {
      await bridge.close()
      throw new DatabaseError('DB_UNAVAILABLE', `cannot connect to the database ${redact(url)}: ${h.detail}`)
    }
    return bridge
  }

  get status(): BridgeHealth {
    return this.health
  }

  /** Runs `steps` in order and returns the last one's result; blocks the event loop until then. */
  call(steps: Step[]): BridgeReply {
    if (this.exited) throw new DatabaseError('DB_UNAVAILABLE', this.exited)
    const id = this.nextId++
    const req: BridgeRequest = { id, sync: true, steps }
    this.syncPort.postMessage(req)
    const deadline = performance.now() + SYNC_WAIT_MS
    for (;;) {
      const got = receiveMessageOnPort(this.syncPort)
      if (got) {
        const reply = got.message as BridgeReply
        // An answer to a request given up on earlier.
        if (reply.id === id) return reply
        continue
      }
      const left = deadline - performance.now()
      if (left <= 0 || this.exited) {
        throw new DatabaseError('DB_UNAVAILABLE', this.exited ?? `the database did not answer within ${SYNC_WAIT_MS / 1000} s`)
      }
      Atomics.wait(this.flag, 0, 0, left)
      // Lowered before the port is read: a reply posted after this raises it again (the worker posts, then raises).
      Atomics.store(this.flag, 0, 0)
    }
  }

  /** Runs `steps` in order after everything posted before; resolves with the last one's result. */
  send(steps: Step[]): Promise<BridgeReply> {
    if (this.exited) return Promise.reject(new DatabaseError('DB_UNAVAILABLE', this.exited))
    const id = this.nextId++
    const req: BridgeRequest = { id, sync: false, steps }
    const reply = new Promise<BridgeReply>((resolve) => this.pending.set(id, resolve))
    this.syncPort.postMessage(req)
    this.holdOpen()
    return reply
  }

  async close(): Promise<void> {
    if (this.exited) return
    this.exited = 'the database is closed'
    await this.worker.terminate()
  }

  /** Keeps the process alive while an answer is awaited, and only then: an idle member stops when its work does. */
  private holdOpen(): void {
    if (this.pending.size > 0 || this.starting) {
      this.worker.ref()
      this.asyncPort.ref()
    } else {
      this.worker.unref()
      this.asyncPort.unref()
    }
  }

  private gone(why: string): void {
    this.exited ??= why
    const lost: BridgeReply = { id: 0, ok: false, failure: { message: this.exited, unavailable: true } }
    for (const [id, done] of this.pending) done({ ...lost, id })
    this.pending.clear()
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
