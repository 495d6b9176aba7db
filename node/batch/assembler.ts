import { newId, type BatchId, type MessageId, type TxId } from '../core/ids.js'
import { now } from '../core/time.js'
import { errorMessage } from '../core/errors.js'
import { Backoff, sleep } from '../core/backoff.js'
import type { Database } from '../db/database.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { Chain } from '../chain/index.js'
import type { BatchRecord, BatchType, Data, LocalIdentity, Message } from '../model/index.js'
import { batchMessage, batchPayload } from './payload.js'
import { sealManifest } from './verify.js'
import type { BatchConfig } from './config.js'
import type { Dispatcher, SealedBatch } from './dispatcher.js'

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
  chain: Chain
  self: LocalIdentity
  config: BatchConfig
  dispatcher: Dispatcher
  log: (line: string) => void
  signal: AbortSignal
  stopped: () => boolean
}

const RETRY_MIN_MS = 500
const RETRY_MAX_MS = 10_000

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

  constructor(
    private readonly deps: AssemblerDeps,
    private readonly key: { type: BatchType; namespace: string; author: string; key: string },
  ) {}

  add(a: Accepted): void {
    if (this.queued.has(a.message.header.id) || this.broken) return
    this.queued.add(a.message.header.id)
    this.queue.push(a)
    this.queuedBytes += a.bytes
    const { size, payloadLimit, timeoutMs } = this.deps.config
    if (this.queue.length >= size || this.queuedBytes >= payloadLimit || a.urgent) this.cut()
    else if (!this.timer) this.timer = setTimeout(() => this.onTimeout(), timeoutMs)
  }

  /** A batch sealed by an earlier run, not yet pinned: dispatched in the order given. */
  resume(batch: SealedBatch): void {
    this.dispatch(batch, Promise.resolve())
  }

  /** Clears the pending timeout and waits for the dispatches in flight (they end once the manager's signal aborts). */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    await Promise.all(this.jobs)
  }

  private onTimeout(): void {
    this.timer = undefined
    // The batch keeps growing while a dispatch is in flight; it is cut when that one is pinned.
    if (this.inFlight === 0) this.cut()
  }

  /** Seals the queue into as many batches as its limits need. */
  private cut(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
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

  private seal(take: Accepted[]): void {
    const { db, messages, batches, self, log } = this.deps
    const id = newId<BatchId>()
    const txId = newId<TxId>()
    const data = dedupe(take.flatMap((a) => a.data))
    const { manifest, hash } = sealManifest({ id, tx: { type: 'batch_pin', id: txId }, messages: take.map((a) => batchMessage(a.message)), data })
    const record: BatchRecord = { id, type: this.key.type, namespace: this.key.namespace, author: this.key.author, key: this.key.key, node: self.nodeDid, created: now(), hash, manifest, txId, state: 'sealed', local: true }
    // The transaction runs now, so batches are sealed (and their pins later submitted) in the order they were cut.
    const durable = db.transaction((tx) => {
      // Known at once, not when the promise settles: the next batch of this cut must not be sealed past this one.
      this.broken = true
      batches.insert(tx, record)
      messages.assignBatch(
        tx,
        take.map((a) => a.message.header.id),
        id,
        txId,
      )
      this.broken = false
    })
    durable.catch((err: unknown) => {
      if (this.sealFailureLogged) return
      this.broken = true
      this.sealFailureLogged = true
      log(`batch: ${this.key.namespace}/${this.key.author}: sealing failed, no more batches until the next start (their messages stay accepted): ${errorMessage(err)}`)
    })
    this.dispatch({ record, payload: batchPayload(record, take.map((a) => a.message), data) }, durable)
  }

  /** Uploads (retrying), then takes this batch's turn on the chain, then records the pin. */
  private dispatch(batch: SealedBatch, sealed: Promise<void>): void {
    this.inFlight++
    // One pacing and one set of log lines for the whole dispatch, upload and pin alike.
    const backoff = new Backoff(RETRY_MIN_MS, RETRY_MAX_MS)
    const prepared = sealed.then(() => this.prepare(batch, backoff))
    const submitted = this.pinTurn.then(async () => {
      const ref = await prepared
      return ref === undefined ? undefined : { ref, mined: this.submit(batch, ref, backoff) }
    })
    // The next batch may submit as soon as this one has (not when it is mined): the chain keeps submission order.
    this.pinTurn = submitted.then(
      () => undefined,
      () => undefined,
    )
    const job = submitted
      .then(async (s) => {
        if (s) await this.recordPin(batch, s.ref, await s.mined)
      })
      .catch((err: unknown) => {
        if (!this.deps.stopped()) this.deps.log(`batch ${batch.record.id}: ${errorMessage(err)}; left for the next start`)
      })
      .finally(() => {
        this.jobs.delete(job)
        this.inFlight--
        if (this.inFlight === 0 && this.queue.length > 0 && !this.timer) this.cut()
      })
    this.jobs.add(job)
  }

  /** The dispatcher's upload, retried until it succeeds; undefined once the manager stops. */
  private async prepare(batch: SealedBatch, backoff: Backoff): Promise<string | undefined> {
    for (;;) {
      if (this.deps.stopped()) return undefined
      try {
        return await this.deps.dispatcher.prepare(batch, this.deps.signal)
      } catch (err) {
        if (!this.failed(batch, backoff, err)) return undefined
        await sleep(backoff.next(), this.deps.signal)
      }
    }
  }

  /** Submits the pin now (keeping this batch's place in the order) and waits for it to be mined, retrying. */
  private async submit(batch: SealedBatch, payloadRef: string, backoff: Backoff): Promise<string | undefined> {
    const { record } = batch
    const req = { txId: record.txId, batchId: record.id, batchHash: record.hash, payloadRef, contexts: this.deps.dispatcher.contexts(batch) }
    let attempt = this.deps.chain.submitPinBatch(req, this.deps.signal)
    for (;;) {
      try {
        const { txHash } = await attempt
        if (backoff.retrying) this.deps.log(`batch ${record.id}: dispatched after retrying`)
        return txHash
      } catch (err) {
        if (!this.failed(batch, backoff, err)) return undefined
        await sleep(backoff.next(), this.deps.signal)
        if (this.deps.stopped()) return undefined
        attempt = this.deps.chain.submitPinBatch(req, this.deps.signal)
      }
    }
  }

  private async recordPin(batch: SealedBatch, payloadRef: string, txHash: string | undefined): Promise<void> {
    if (txHash === undefined) return
    await this.deps.db.transaction((tx) => this.deps.batches.setPinned(tx, batch.record.id, txHash, payloadRef))
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
