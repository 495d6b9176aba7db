import { sleep } from '../core/backoff.js'
import { errorMessage, isParleyError, ParleyError } from '../core/errors.js'
import type { BatchId, Hash } from '../core/ids.js'
import { now } from '../core/time.js'
import type { Database } from '../db/database.js'
import type { DeliveriesRepo, Delivery } from '../db/repos/deliveries.js'
import type { BatchPayload } from '../model/index.js'
import type { Exchange, Peer } from '../exchange/index.js'
import type { DeliveryGate } from './delivery-gate.js'
import type { OperationRecorder } from '../operations/recorder.js'

const RETRY_MIN_MS = 1_000
const RETRY_MAX_MS = 60_000
/** How long stop() lets sends under way finish before leaving them: their rows are durable and resume at the next start. */
const STOP_GRACE_MS = 2_000

export interface DeliveryQueueDeps {
  db: Database
  deliveries: DeliveriesRepo
  exchange: Pick<Exchange, 'sendBatch' | 'sendBlob'>
  /** The registered peer behind a node DID; undefined while its registration has not been seen here. */
  peerOf: (nodeDid: string) => Peer | undefined
  /** A sealed private batch's payload as stored here (for a retry, or a delivery resumed after a restart). */
  load: (batchId: BatchId) => BatchPayload | undefined
  /**
   * A held blob's content, read afresh from the blob store at each iteration (the exchange iterates it again at each
   * of its attempts); undefined when this node does not hold the blob.
   */
  blob: (hash: Hash) => AsyncIterable<Uint8Array> | undefined
  log: (line: string) => void
  /** The wait before the n-th retry (n from 1); doubling from 1 s to 60 s by default. */
  retryDelayMs?: (attempts: number) => number
  /** How long stop() waits for sends under way (STOP_GRACE_MS by default). */
  stopGraceMs?: number
  /** The admin routes' holds and drops (see DeliveryGate); without it every delivery goes. */
  gate?: DeliveryGate
  /** Where each delivery is also recorded as an operation (`dataexchange_send_batch`, `dataexchange_send_blob`). */
  operationRecorder?: OperationRecorder
}

/**
 * The durable outbound queue of private batches: one row per (batch, peer node) in `deliveries` (schema v6), each
 * sent through the exchange until the peer acknowledges it (its 204: the batch is stored there), retried with backoff
 * while it may work later (`UNAVAILABLE`, or the peer not known yet), and marked failed (logged) when the peer refuses
 * it for good (`BAD_REQUEST`). Rows pending at start are resumed, so a delivery outlives a restart: at least once, the
 * receiver deduplicates.
 *
 * `enqueue` answers once the rows are durable, not once the peers have the batch: as in FireFly, the pin does not
 * wait for delivery. A member that is down, or slow, then holds only what it receives itself (its recipients wait for
 * the batch by nonce and confirm it when it arrives), never the group's other members or the sender's later batches.
 *
 * The gate is asked before each attempt and before each blob and the batch within one: a held delivery is parked in
 * memory (no attempt counted, no backoff, no log line) until the gate says otherwise, then sent at once; a dropped one
 * is let go (its row stays pending, for the next start). A send already under way when a hold or drop comes finishes.
 */
export class DeliveryQueue {
  readonly name = 'private deliveries'
  private stopped = false
  /** Deliveries waiting for their attempt (their first, or a retry's backoff), by key. */
  private readonly timers = new Map<string, { timer: NodeJS.Timeout; d: Delivery }>()
  private readonly active = new Map<string, Promise<void>>()
  /** Deliveries parked by a hold, by key: asked about again whenever the gate changes. */
  private readonly held = new Map<string, Delivery>()

  constructor(private readonly deps: DeliveryQueueDeps) {
    deps.gate?.onChange(() => this.regate())
  }

  start(): void {
    for (const d of this.deps.deliveries.pending()) this.schedule(d)
  }

  /** Stops retrying; sends under way get a short grace to finish, the rest resume from their rows at the next start. */
  async stop(): Promise<void> {
    this.stopped = true
    for (const t of this.timers.values()) clearTimeout(t.timer)
    this.timers.clear()
    this.held.clear()
    await Promise.race([Promise.allSettled(this.active.values()), sleep(this.deps.stopGraceMs ?? STOP_GRACE_MS)])
  }

  /**
   * Records a delivery of the batch to each peer (rows already there keep their state) and starts the first attempts
   * with the payload in hand; resolves once the rows are durable.
   */
  async enqueue(payload: BatchPayload, peers: readonly string[]): Promise<void> {
    if (this.stopped) throw new ParleyError('UNAVAILABLE', 'private deliveries are stopping')
    const at = now()
    await this.deps.db.transaction((tx) => {
      this.deps.deliveries.enqueue(tx, payload.id, peers, at)
      this.deps.operationRecorder?.deliveryQueued(tx, payload, peers, at)
    })
    this.deps.gate?.bind(payload.id, payload.messages.map((m) => m.header.id))
    for (const d of this.deps.deliveries.ofBatch(payload.id)) if (d.state === 'pending') this.schedule({ ...d, nextAt: 0 }, payload)
  }

  /** `payload`: the batch as sealed, for a first attempt; retries read it from the database, so none is held in memory. */
  private schedule(d: Delivery, payload?: BatchPayload): void {
    if (this.stopped) return
    const k = key(d)
    if (this.active.has(k) || this.timers.has(k) || this.held.has(k)) return
    const verdict = this.verdict(d)
    if (verdict === 'dropped') return
    if (verdict === 'held') {
      this.held.set(k, d)
      return
    }
    const wait = Math.max(0, d.nextAt - Date.now())
    const timer = setTimeout(() => {
      this.timers.delete(k)
      const run = this.attempt(d, payload).then((outcome) => {
        this.active.delete(k)
        // Parked by the gate: scheduled again, which holds it (or sends it, when released meanwhile) or lets it go.
        if (outcome === 'gated') this.schedule({ ...d, nextAt: 0 })
      })
      this.active.set(k, run)
    }, wait)
    this.timers.set(k, { timer, d })
  }

  /**
   * Never rejects: every outcome, the database refusing its bookkeeping included, ends in a row state or a retry, or
   * (`gated`) stops before a send because the gate holds or dropped the delivery, nothing counted.
   */
  private async attempt(d: Delivery, given: BatchPayload | undefined): Promise<'gated' | undefined> {
    const { db, deliveries, log, operationRecorder } = this.deps
    const attempts = d.attempts + 1
    const gated = (): boolean => this.verdict(d) !== 'open'
    try {
      if (gated()) return 'gated'
      const payload = given ?? this.deps.load(d.batchId)
      if (!payload) throw new ParleyError('BAD_REQUEST', `batch ${d.batchId} is not stored here`)
      const peer = this.deps.peerOf(d.peer)
      if (!peer) throw new ParleyError('UNAVAILABLE', `peer ${d.peer} is not registered here yet`)
      for (const b of blobsOf(payload)) {
        if (deliveries.blobDelivered(d.peer, b.hash)) continue
        if (gated()) return 'gated'
        const content = this.deps.blob(b.hash)
        if (!content) throw new ParleyError('BAD_REQUEST', `blob ${b.hash} of batch ${d.batchId} is not held here`)
        await this.deps.exchange.sendBlob(peer, b, content)
        const at = now()
        await db.transaction((tx) => {
          deliveries.blobAcknowledged(tx, d.peer, b.hash, at)
          operationRecorder?.blobSent(tx, payload, d.peer, b.hash, payload.data.find((x) => x.blob?.hash === b.hash)?.id ?? '', at)
        })
      }
      if (gated()) return 'gated'
      await this.deps.exchange.sendBatch(peer, payload)
      const at = now()
      await db.transaction((tx) => {
        deliveries.done(tx, d.batchId, d.peer, at)
        operationRecorder?.deliverySettled(tx, d.batchId, d.peer, { ok: true }, at)
      })
      if (attempts > 1) log(`delivery: batch ${d.batchId} delivered to ${d.peer} after ${attempts} attempts`)
    } catch (err) {
      if (this.stopped) return undefined
      const reason = errorMessage(err)
      try {
        if (isParleyError(err, 'BAD_REQUEST')) {
          const at = now()
          await db.transaction((tx) => {
            deliveries.failed(tx, d.batchId, d.peer, reason, at)
            operationRecorder?.deliverySettled(tx, d.batchId, d.peer, { ok: false, reason, final: true }, at)
          })
          log(`delivery: batch ${d.batchId} to ${d.peer} refused for good: ${reason}`)
          return undefined
        }
        const nextAt = Date.now() + (this.deps.retryDelayMs ?? defaultDelay)(attempts)
        await db.transaction((tx) => {
          deliveries.retryAt(tx, d.batchId, d.peer, nextAt, reason)
          operationRecorder?.deliverySettled(tx, d.batchId, d.peer, { ok: false, reason, final: false }, now())
        })
        if (attempts === 1 || attempts % 10 === 0) log(`delivery: batch ${d.batchId} to ${d.peer} not delivered yet (attempt ${attempts}): ${reason}; retrying`)
        this.retry({ ...d, attempts, nextAt })
      } catch (dbErr) {
        // The database refused the bookkeeping (a full disk): try the delivery again later, the row is still pending.
        log(`delivery: batch ${d.batchId} to ${d.peer}: ${errorMessage(dbErr)}; retrying`)
        this.retry({ ...d, attempts, nextAt: Date.now() + RETRY_MAX_MS })
      }
    }
    return undefined
  }

  /** The batches with a delivery to the org's node(s) not yet acknowledged nor refused (their rows are pending). */
  pendingTo(org: string): BatchId[] {
    return [...new Set(this.deps.deliveries.pending().filter((d) => this.deps.peerOf(d.peer)?.org === org).map((d) => d.batchId))]
  }

  private verdict(d: Delivery): 'open' | 'held' | 'dropped' {
    const gate = this.deps.gate
    if (!gate) return 'open'
    // A peer not registered here yet has no org to match: it is retried as unknown, as without the gate.
    const org = this.deps.peerOf(d.peer)?.org
    return org === undefined ? 'open' : gate.verdict(d.batchId, org)
  }

  /**
   * The gate changed: a delivery waiting for its attempt that is now held is parked (its backoff forgotten) and one
   * now dropped is let go; a parked one no longer held goes out now, without a backoff.
   */
  private regate(): void {
    for (const [k, { timer, d }] of [...this.timers]) {
      const verdict = this.verdict(d)
      if (verdict === 'open') continue
      clearTimeout(timer)
      this.timers.delete(k)
      if (verdict === 'held') this.held.set(k, d)
    }
    for (const [k, d] of [...this.held]) {
      const verdict = this.verdict(d)
      if (verdict === 'held') continue
      this.held.delete(k)
      if (verdict === 'open') this.schedule({ ...d, nextAt: 0 })
    }
  }

  private retry(d: Delivery): void {
    this.active.delete(key(d))
    this.schedule(d)
  }
}

/** The distinct blobs the batch's data refer to, in the order they first appear. */
export function blobsOf(payload: BatchPayload): { hash: Hash; size: number }[] {
  const seen = new Map<Hash, { hash: Hash; size: number }>()
  for (const d of payload.data) if (d.blob && !seen.has(d.blob.hash)) seen.set(d.blob.hash, { hash: d.blob.hash, size: d.blob.size })
  return [...seen.values()]
}

const key = (d: Delivery): string => `${d.batchId}\u0000${d.peer}`

function defaultDelay(attempts: number): number {
  return Math.min(RETRY_MIN_MS * 2 ** Math.min(attempts - 1, 16), RETRY_MAX_MS)
}
