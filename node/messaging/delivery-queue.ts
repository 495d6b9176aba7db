import { errorMessage, isParleyError, ParleyError } from '../core/errors.js'
import type { BatchId } from '../core/ids.js'
import { now } from '../core/time.js'
import type { Database } from '../db/database.js'
import type { DeliveriesRepo, Delivery } from '../db/repos/deliveries.js'
import type { BatchPayload } from '../model/index.js'
import type { Exchange, Peer } from '../exchange/index.js'

const RETRY_MIN_MS = 1_000
const RETRY_MAX_MS = 60_000

export interface DeliveryQueueDeps {
  db: Database
  deliveries: DeliveriesRepo
  exchange: Pick<Exchange, 'sendBatch'>
  /** The registered peer behind a node DID; undefined while its registration has not been seen here. */
  peerOf: (nodeDid: string) => Peer | undefined
  /** A sealed private batch's payload as stored here (for a delivery resumed after a restart). */
  load: (batchId: BatchId) => BatchPayload | undefined
  log: (line: string) => void
  /** The wait before the n-th retry (n from 1); doubling from 1 s to 60 s by default. */
  retryDelayMs?: (attempts: number) => number
}

/**
 * The durable outbound queue of private batches: one row per (batch, peer node) in `deliveries` (schema v6), each
 * sent through the exchange until the peer acknowledges it (its 204: the batch is stored there), retried with backoff
 * while it may work later (`UNAVAILABLE`, or the peer not known yet), and marked failed (logged) when the peer refuses
 * it for good (`BAD_REQUEST`). Rows pending at start are resumed, so a delivery outlives a restart: at least once, the
 * receiver deduplicates. `deliver` answers once every row of a batch is settled, which is when the batch manager may
 * pin it (FireFly's order: data before pin).
 */
export class DeliveryQueue {
  readonly name = 'private deliveries'
  private stopped = false
  private readonly timers = new Map<string, NodeJS.Timeout>()
  private readonly active = new Map<string, Promise<void>>()
  private readonly waiters = new Map<BatchId, Set<() => void>>()
  private readonly payloads = new Map<BatchId, BatchPayload>()

  constructor(private readonly deps: DeliveryQueueDeps) {}

  start(): void {
    for (const d of this.deps.deliveries.pending()) this.schedule(d)
  }

  async stop(): Promise<void> {
    this.stopped = true
    for (const t of this.timers.values()) clearTimeout(t)
    this.timers.clear()
    await Promise.allSettled(this.active.values())
  }

  /**
   * Queues the batch for each peer (rows already there keep their state) and resolves once every peer has
   * acknowledged or refused it. Rejects when `signal` aborts (the rows stay and are resumed at the next start).
   */
  async deliver(payload: BatchPayload, peers: readonly string[], signal: AbortSignal): Promise<void> {
    signal.throwIfAborted()
    this.payloads.set(payload.id, payload)
    await this.deps.db.transaction((tx) => this.deps.deliveries.enqueue(tx, payload.id, peers, now()))
    const settled = new Promise<void>((resolve, reject) => {
      const done = (): void => {
        signal.removeEventListener('abort', abort)
        resolve()
      }
      const abort = (): void => {
        this.waiters.get(payload.id)?.delete(done)
        reject(signal.reason instanceof Error ? signal.reason : new ParleyError('UNAVAILABLE', 'stopped'))
      }
      signal.addEventListener('abort', abort, { once: true })
      const set = this.waiters.get(payload.id) ?? new Set()
      set.add(done)
      this.waiters.set(payload.id, set)
    })
    for (const d of this.deps.deliveries.ofBatch(payload.id)) if (d.state === 'pending') this.schedule({ ...d, nextAt: 0 })
    this.checkSettled(payload.id)
    return settled
  }

  private schedule(d: Delivery): void {
    if (this.stopped) return
    const k = `${d.batchId}\u0000${d.peer}`
    if (this.active.has(k) || this.timers.has(k)) return
    const wait = Math.max(0, d.nextAt - Date.now())
    this.timers.set(
      k,
      setTimeout(() => {
        this.timers.delete(k)
        const run = this.attempt(d).finally(() => this.active.delete(k))
        this.active.set(k, run)
      }, wait),
    )
  }

  private async attempt(d: Delivery): Promise<void> {
    const { db, deliveries, log } = this.deps
    const payload = this.payloads.get(d.batchId) ?? this.deps.load(d.batchId)
    const attempts = d.attempts + 1
    try {
      if (!payload) throw new ParleyError('BAD_REQUEST', `batch ${d.batchId} is not stored here`)
      const peer = this.deps.peerOf(d.peer)
      if (!peer) throw new ParleyError('UNAVAILABLE', `peer ${d.peer} is not registered here yet`)
      await this.deps.exchange.sendBatch(peer, payload)
      await db.transaction((tx) => deliveries.done(tx, d.batchId, d.peer))
      if (attempts > 1) log(`delivery: batch ${d.batchId} delivered to ${d.peer} after ${attempts} attempts`)
    } catch (err) {
      if (this.stopped) return
      const reason = errorMessage(err)
      try {
        if (isParleyError(err, 'BAD_REQUEST')) {
          await db.transaction((tx) => deliveries.failed(tx, d.batchId, d.peer, reason))
          log(`delivery: batch ${d.batchId} to ${d.peer} refused for good: ${reason}`)
        } else {
          const nextAt = Date.now() + (this.deps.retryDelayMs ?? defaultDelay)(attempts)
          await db.transaction((tx) => deliveries.retryAt(tx, d.batchId, d.peer, nextAt, reason))
          if (attempts === 1 || attempts % 10 === 0) log(`delivery: batch ${d.batchId} to ${d.peer} not delivered yet (attempt ${attempts}): ${reason}; retrying`)
          this.active.delete(`${d.batchId}\u0000${d.peer}`)
          this.schedule({ ...d, attempts, nextAt })
          return
        }
      } catch (dbErr) {
        // The database refused the bookkeeping (a full disk): try the delivery again later, the row is still pending.
        log(`delivery: batch ${d.batchId} to ${d.peer}: ${errorMessage(dbErr)}; retrying`)
        this.active.delete(`${d.batchId}\u0000${d.peer}`)
        this.schedule({ ...d, attempts, nextAt: Date.now() + RETRY_MAX_MS })
        return
      }
    }
    this.checkSettled(d.batchId)
  }

  private checkSettled(batchId: BatchId): void {
    const waiting = this.waiters.get(batchId)
    if (!waiting || waiting.size === 0) return
    if (this.deps.deliveries.ofBatch(batchId).some((d) => d.state === 'pending')) return
    this.waiters.delete(batchId)
    this.payloads.delete(batchId)
    for (const w of waiting) w()
  }
}

function defaultDelay(attempts: number): number {
  return Math.min(RETRY_MIN_MS * 2 ** Math.min(attempts - 1, 16), RETRY_MAX_MS)
}
