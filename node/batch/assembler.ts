import { newId, type BatchId, type Hash, type MessageId, type TxId } from '../core/ids.js'
import { now } from '../core/time.js'
import { errorMessage } from '../core/errors.js'
import { Backoff, sleep } from '../core/backoff.js'
import type { Database } from '../db/database.js'
import { retryableWrite } from '../db/engine.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { EventsRepo } from '../db/repos/events.js'
import type { Chain, PinBatchRequest, PinSubmission } from '../chain/index.js'
import type { BatchRecord, BatchTxType, BatchType, Data, LocalIdentity, Message, NodeEvent, TxType } from '../model/index.js'
import { batchMessage, batchPayload } from './payload.js'
import { sealManifest } from './verify.js'
import type { BatchConfig } from './config.js'
import type { Dispatcher, SealedBatch } from './dispatcher.js'
import type { DispatchProgress } from './progress.js'
import type { OperationRecorder } from '../operations/recorder.js'

/** A message accepted for batching, with its data items (as resolved at send) and its payload estimate. */
export interface Accepted {
  message: Message
  data: readonly Data[]
  bytes: number
  /** A definition (an identity claim, a datatype): others wait for it, so it is sealed at once. */
  urgent: boolean
}

interface AssemblerDeps {
  db: Database
  messages: MessagesRepo
  batches: BatchesRepo
  events: EventsRepo
  /** Told of the events a seal wrote, once it is durable. */
  published: (events: readonly NodeEvent[]) => void
  chain: Chain
  self: LocalIdentity
  config: BatchConfig
  dispatcher: Dispatcher
  log: (line: string) => void
  signal: AbortSignal
  stopped: () => boolean
  /** Where a pinned batch's upload and pin sending are noted until its pin is recorded (for traces). */
  progress?: DispatchProgress
  /** Told of each sealed batch inside its seal's transaction (see SealedBatchHolder). */
  recent?: SealedBatchHolder
  /** Where a batch's pin and upload are also recorded as operations, with the seal and with the pin. */
  operationRecorder?: OperationRecorder
  /** The waits between a dispatch's tries (DISPATCH_RETRY unless given). */
  retry?: RetryPace
}

/** The first wait between tries, doubled after each failure up to the cap. */
export interface RetryPace {
  minMs: number
  maxMs: number
}

/**
 * Keeps a batch just sealed as its rows now stand (the aggregator's RecentBatches), so that confirming it when its pin
 * comes back does not read back the messages and data this member wrote moments before.
 */
export interface SealedBatchHolder {
  sealed(record: Pick<BatchRecord, 'id' | 'hash' | 'manifest' | 'txId'>, messages: readonly Message[], data: readonly Data[]): void
}

/** A failed upload or pin is tried again after 0.5 s, then 1, 2... up to 10 s between tries. */
export const DISPATCH_RETRY: RetryPace = { minMs: 500, maxMs: 10_000 }

/**
 * Batches of one (type, namespace, author, key). A batch is cut when it reaches its message count or payload limit,
 * or when its timeout passes with no dispatch of this assembler in flight; while one is in flight the next batch
 * keeps growing, since sealing it sooner would only queue it. A cut seals at once from what is held in memory (one
 * transaction: the batch, and its messages marked with one statement); then the dispatcher uploads it while later
 * batches are sealed and uploaded too, and pins are submitted strictly in seal order.
 */
export class Assembler {
  private queue: Accepted[] = []
  private readonly queued = new Set<MessageId>()
  private queuedBytes = 0
  private timer: NodeJS.Timeout | undefined
  /** Sealed batches whose pin is not mined yet. */
  private inFlight = 0
  /** The previous batch's turn to submit its pin: each batch submits only after the one sealed before it. */
  private pinTurn: Promise<void> = Promise.resolve()
  private readonly jobs = new Set<Promise<void>>()
  /** A seal failed (only the database can make it): later batches would overtake it, so nothing more is sealed. */
  private broken = false
  private sealFailureLogged = false
  /** The disk is full: the queue is cut once the database takes writes again. */
  private waitingForSpace = false
  /** An unpinned cut due at the end of this event-loop turn. */
  private turnCut: NodeJS.Immediate | undefined

  constructor(
    private readonly deps: AssemblerDeps,
    private readonly key: { type: BatchType; namespace: string; author: string; key: string; group?: Hash; txtype?: TxType },
  ) {}

  /**
   * Unpinned private messages (txtype none): sealed at the end of the turn they arrive in (no batching wait: every
   * message that a group commit made durable together goes in one batch, rather than a batch and a delivery per
   * peer each), delivered, never pinned.
   */
  private get unpinned(): boolean {
    return this.key.txtype === 'none'
  }

  add(a: Accepted): void {
    if (this.queued.has(a.message.header.id) || this.broken) return
    this.queued.add(a.message.header.id)
    this.queue.push(a)
    this.queuedBytes += a.bytes
    const { size, payloadLimit, timeoutMs } = this.deps.config
    if (this.queue.length >= size || this.queuedBytes >= payloadLimit || a.urgent) this.cut()
    else if (this.unpinned) {
      this.turnCut ??= setImmediate(() => {
        this.turnCut = undefined
        this.cut()
      })
    } else if (!this.timer) this.timer = setTimeout(() => this.onTimeout(), timeoutMs)
  }

  /** A batch sealed by an earlier run, not yet pinned: dispatched in the order given. */
  resume(batch: SealedBatch): void {
    this.dispatch(batch, Promise.resolve())
  }

  /** Clears the pending timeout and waits for the dispatches in flight (they end once the manager's signal aborts). */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    if (this.turnCut) clearImmediate(this.turnCut)
    this.turnCut = undefined
    await Promise.all(this.jobs)
  }

  private onTimeout(): void {
    this.timer = undefined
    // The batch keeps growing while a dispatch is in flight; it is cut when that one is pinned.
    if (this.inFlight === 0) this.cut()
  }

  /**
   * Seals the queue into as many batches as its limits need. Not while writes are paused (a full disk, the database
   * server away): the seal would be refused and its messages would stay unbatched until a restart. The check and the
   * seals run in one synchronous step, and a stall only begins in a later callback, so a seal started here is accepted
   * (and, should the disk fill meanwhile, waits for its record to be written).
   */
  private cut(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    if (this.deps.db.writesPaused) return this.cutWhenWritable()
    const { size, payloadLimit } = this.deps.config
    while (this.queue.length > 0 && !this.deps.stopped() && !this.broken) {
      const take: Accepted[] = []
      let bytes = 0
      while (this.queue.length > 0 && take.length < size && (take.length === 0 || bytes + this.queue[0]!.bytes <= payloadLimit)) {
        const next = this.queue.shift()!
        bytes += next.bytes
        take.push(next)
      }
      this.queuedBytes -= bytes
      for (const a of take) this.queued.delete(a.message.header.id)
      this.seal(take)
      // A partial last batch waits for its timeout, unless the queue was cut because it was full.
      if (this.queue.length > 0 && this.queue.length < size && this.queuedBytes < payloadLimit) {
        this.timer = setTimeout(() => this.onTimeout(), this.deps.config.timeoutMs)
        return
      }
    }
  }

  private cutWhenWritable(): void {
    if (this.waitingForSpace) return
    this.waitingForSpace = true
    void this.deps.db.whenWritable(this.deps.signal).then(() => {
      this.waitingForSpace = false
      if (!this.deps.stopped() && this.queue.length > 0) this.cut()
    })
  }

  private seal(take: Accepted[]): void {
    const { db, messages, batches, self, log } = this.deps
    const id = newId<BatchId>()
    const txId = newId<TxId>()
    const data = dedupe(take.flatMap((a) => a.data))
    // The manifest covers message hashes, not pins: it can be computed before the dispatcher's seal gives the pins.
    const txType: BatchTxType = this.unpinned ? 'unpinned' : 'batch_pin'
    const { manifest, hash } = sealManifest({ id, tx: { type: txType, id: txId }, messages: take.map((a) => batchMessage(a.message)), data })
    const record: BatchRecord = {
      id,
      type: this.key.type,
      namespace: this.key.namespace,
      author: this.key.author,
      key: this.key.key,
      node: self.nodeDid,
      ...(this.key.group ? { group: this.key.group } : {}),
      created: now(),
      hash,
      manifest,
      txId,
      state: 'sealed',
      local: true,
    }
    let sealedMessages: Message[] = take.map((a) => a.message)
    let written: NodeEvent[] = []
    // The transaction runs now, so batches are sealed (and their pins later submitted) in the order they were cut.
    const durable = db.transaction((tx) => {
      // Known at once, not when the promise settles: the next batch of this cut must not be sealed past this one. (On
      // PostgreSQL a seal's writes go unwaited, so a failure of one of them is known at the COMMIT; a seal of the same
      // turn after it may then commit. Their inserts skip conflicts: what fails them, a full disk or a lost server,
      // fails the whole turn.)
      this.broken = true
      batches.insert(tx, record)
      this.deps.operationRecorder?.batchSealed(tx, record, txType === 'batch_pin')
      if (this.deps.dispatcher.seal) sealedMessages = this.deps.dispatcher.seal(tx, record, sealedMessages)
      messages.assignBatch(
        tx,
        take.map((a) => ({ id: a.message.header.id, hash: a.message.hash })),
        id,
        txId,
      )
      // Told after every write to the messages' rows in this seal, before anything else can change them.
      this.deps.recent?.sealed(record, sealedMessages, data)
      // The pin's transaction is created with its batch, as FireFly does; an unpinned batch submits none.
      if (txType === 'batch_pin') written = this.deps.events.insertMany(tx, [{ type: 'transaction_submitted', namespace: record.namespace, reference: txId, tx: txId, topic: txType }], record.created)
      this.broken = false
    })
    durable.then(
      () => {
        if (written.length > 0) this.deps.published(written)
      },
      (err: unknown) => {
        if (this.sealFailureLogged) return
        this.broken = true
        this.sealFailureLogged = true
        log(`batch: ${this.key.namespace}/${this.key.author}: sealing failed, no more batches until the next start (their messages stay accepted): ${errorMessage(err)}`)
      },
    )
    this.dispatch({ record, payload: batchPayload(record, sealedMessages, data) }, durable)
  }

  /** Uploads (retrying), then takes this batch's turn on the chain, then records the pin. */
  private dispatch(batch: SealedBatch, sealed: Promise<void>): void {
    this.inFlight++
    // One pacing and one set of log lines for the whole dispatch, upload and pin alike.
    const { minMs, maxMs } = this.deps.retry ?? DISPATCH_RETRY
    const backoff = new Backoff(minMs, maxMs)
    const prepared = sealed.then(() => this.prepare(batch, backoff))
    if (this.unpinned) return this.dispatchUnpinned(batch, prepared, backoff)
    // Awaited only once the previous batch has had its turn: until then a failed seal must not count as unhandled.
    prepared.catch(() => undefined)
    const submitted = this.pinTurn.then(async () => {
      const ref = await prepared
      if (ref === undefined) return undefined
      const sent = await this.send(batch, ref, backoff)
      return sent === undefined ? undefined : { ref, mined: this.mined(batch, ref, sent.pin, backoff) }
    })
    // The next batch may submit as soon as the chain has this one's transaction (not when it is mined): the nonces
    // keep that order. A send that fails is retried before the turn passes on, so it cannot land behind a later one.
    this.pinTurn = submitted.then(
      () => undefined,
      () => undefined,
    )
    const job = submitted
      .then(async (s) => {
        if (s) await this.recordPin(batch, s.ref, await s.mined, backoff)
      })
      .catch((err: unknown) => {
        if (!this.deps.stopped()) this.deps.log(`batch ${batch.record.id}: ${errorMessage(err)}; left for the next start`)
      })
      .finally(() => {
        this.deps.progress?.forget(batch.record.id)
        this.jobs.delete(job)
        this.inFlight--
        if (this.inFlight === 0 && this.queue.length > 0 && !this.timer) this.cut()
      })
    this.jobs.add(job)
  }

  /**
   * An unpinned batch: once the dispatcher has queued its deliveries (durably), it is recorded as sent. No chain
   * transaction, and no turn to wait for: nothing orders it against other batches.
   */
  private dispatchUnpinned(batch: SealedBatch, prepared: Promise<string | undefined>, backoff: Backoff): void {
    const job = prepared
      .then(async (ref) => {
        if (ref === undefined) return
        const { db } = this.deps
        for (;;) {
          try {
            await db.transaction((tx) => this.deps.batches.setSent(tx, batch.record.id))
            return
          } catch (err) {
            if (!retryableWrite(db, err) || !this.failed(batch, backoff, err)) throw err
            await db.whenWritable(this.deps.signal)
          }
        }
      })
      .catch((err: unknown) => {
        if (!this.deps.stopped()) this.deps.log(`batch ${batch.record.id}: ${errorMessage(err)}; left for the next start`)
      })
      .finally(() => {
        this.jobs.delete(job)
        this.inFlight--
      })
    this.jobs.add(job)
  }

  /** The dispatcher's upload, retried until it succeeds; undefined once the manager stops. */
  private async prepare(batch: SealedBatch, backoff: Backoff): Promise<string | undefined> {
    for (;;) {
      if (this.deps.stopped()) return undefined
      try {
        const ref = await this.deps.dispatcher.prepare(batch, this.deps.signal)
        if (!this.unpinned) this.deps.progress?.uploaded(batch.record.id, ref)
        return ref
      } catch (err) {
        if (!this.failed(batch, backoff, err)) return undefined
        await sleep(backoff.next(), this.deps.signal)
      }
    }
  }

  /**
   * Submits the pin until the chain has taken it (holding this batch's turn while it retries); undefined once stopped.
   * Answered wrapped: an async function returning the submission itself would wait for it to be mined.
   */
  private async send(batch: SealedBatch, payloadRef: string, backoff: Backoff): Promise<{ pin: PinSubmission } | undefined> {
    for (;;) {
      if (this.deps.stopped()) return undefined
      const attempt = this.deps.chain.submitPinBatch(this.pinRequest(batch, payloadRef), this.deps.signal)
      try {
        this.deps.progress?.sent(batch.record.id, await attempt.sent)
        return { pin: attempt }
      } catch (err) {
        if (!this.failed(batch, backoff, err)) return undefined
        await sleep(backoff.next(), this.deps.signal)
      }
    }
  }

  /**
   * Waits for the sent pin to be mined. A transaction that fails after it was sent (reverted, or lost by the chain)
   * is submitted again; that one can only take its place after pins sent meanwhile, which receivers accept (a batch
   * is ordered by its first pin), and which only a broken chain or contract causes.
   */
  private async mined(batch: SealedBatch, payloadRef: string, first: PinSubmission, backoff: Backoff): Promise<string | undefined> {
    let attempt: PinSubmission | undefined = first
    for (;;) {
      try {
        const { txHash } = await attempt
        if (backoff.retrying) this.deps.log(`batch ${batch.record.id}: dispatched after retrying`)
        return txHash
      } catch (err) {
        if (!this.failed(batch, backoff, err)) return undefined
        await sleep(backoff.next(), this.deps.signal)
        attempt = (await this.send(batch, payloadRef, backoff))?.pin
        if (attempt === undefined) return undefined
      }
    }
  }

  private pinRequest(batch: SealedBatch, payloadRef: string): PinBatchRequest {
    const { record } = batch
    return { txId: record.txId, batchId: record.id, batchHash: record.hash, payloadRef, contexts: this.deps.dispatcher.contexts(batch) }
  }

  /**
   * Records the mined pin. Tried again while the disk is full: a batch left unrecorded would be pinned a second time
   * after a restart.
   */
  private async recordPin(batch: SealedBatch, payloadRef: string, txHash: string | undefined, backoff: Backoff): Promise<void> {
    if (txHash === undefined) return
    const { db } = this.deps
    for (;;) {
      try {
        const noted = this.deps.progress?.of(batch.record.id)
        const times = { ...(noted?.uploaded ? { uploaded: noted.uploaded.at } : {}), ...(noted?.sent ? { pinSent: noted.sent.at } : {}) }
        const pinned = { chainTx: txHash, payloadRef, contexts: this.deps.dispatcher.contexts(batch), ...(times.uploaded ? { uploaded: times.uploaded } : {}) }
        await db.transaction((tx) => {
          this.deps.batches.setPinned(tx, batch.record.id, txHash, payloadRef, times)
          this.deps.operationRecorder?.batchPinned(tx, batch.record, pinned, now())
        })
        return
      } catch (err) {
        if (!retryableWrite(db, err) || !this.failed(batch, backoff, err)) throw err
        await db.whenWritable(this.deps.signal)
      }
    }
  }

  /** Logs a new problem once; answers whether to try again (not once the manager stops). */
  private failed(batch: SealedBatch, backoff: Backoff, err: unknown): boolean {
    if (this.deps.stopped()) return false
    const problem = errorMessage(err)
    if (backoff.failed(problem)) this.deps.log(`batch ${batch.record.id}: dispatch failed, retrying: ${problem}`)
    return true
  }
}

function dedupe<T extends { id: string }>(items: readonly T[]): T[] {
  const seen = new Set<string>()
  return items.filter((d) => (seen.has(d.id) ? false : (seen.add(d.id), true)))
}
