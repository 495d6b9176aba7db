import { setMaxListeners } from 'node:events'
import { errorMessage, isParleyError, ParleyError } from '../core/errors.js'
import { Backoff, sleep } from '../core/backoff.js'
import type { Gate } from '../core/gate.js'
import type { Database } from '../db/database.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { PinsRepo } from '../db/repos/pins.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import type { SharedStorage } from '../storage/shared-storage.js'
import { parseBatch } from '../batch/payload.js'
import { checkBatch } from '../batch/verify.js'

import { batchTypeOf, MAX_BATCH_PAYLOAD_BYTES, type AnnouncedBlob, type BatchPayload, type PinnedBatch } from '../model/index.js'

const RETRY_MIN_MS = 250
const RETRY_MAX_MS = 15_000


/** What a downloaded batch turned out to be: one to store, or one to record as refused. */
type Verdict = { ok: true; batch: BatchPayload; manifest: string } | { ok: false; reason: string }

/**
 * Brings other members' broadcast batches in from shared storage: download, verify against the pin and against
 * itself, then hand it to the aggregator, which stores the batch, its messages and its data in the transaction that walks
 * its pins (Aggregator.receive).
 * Batches are known by (id, hash) and fetched per pin event: an (id, hash, payload reference) held or in flight is not
 * fetched again, anything else is (a pin of the same id naming another hash or reference may be a squatter's). A payload
 * that does not verify is recorded as refused, with the reason, and the aggregator frees the pins of that event only:
 * the batch's own pins, with their own reference, are still fetched, and a payload that verifies replaces the refusal.
 * The public blobs a batch announces are fetched now only when its key is a registered member's and signed the pin;
 * otherwise the aggregator asks for them once it reaches a message whose key checks out. A store that fails (a full
 * disk) is tried again, from the download, once the database takes writes again (or after a backoff), so nothing
 * waits for a restart; one log line per distinct problem for the whole fetcher, since every batch meets the same one.
 */
export class BatchFetcher {
  readonly name = 'batch fetcher'
  /** By batch id, hash and payload reference. */
  private readonly inFlight = new Map<string, Promise<void>>()
  /** Pin events naming a payload whose fetch is in flight, by the same key. */
  private readonly queued = new Map<string, PinnedBatch[]>()
  private stopped = false
  /** Every fetch waiting (at a held read gate, in a backoff, in a download) listens on it: no listener cap. */
  private readonly abort = withoutListenerCap(new AbortController())
  /** The fetcher's last problem storing a batch, logged once; cleared (and said) when a store succeeds again. */
  private storeProblem: string | undefined

  constructor(
    private readonly deps: {
      db: Database
      batches: BatchesRepo
      pins: PinsRepo
      /** Whose key a batch is signed with: blobs are fetched on store only for members' batches. */
      identities: IdentitiesRepo
      storage: SharedStorage
      log: (line: string) => void
      /**
       * Stores a verified batch and has its pins walked (the aggregator's `receive`); resolves once it is durable, rejects
       * with BAD_PEER_DATA when its ids are held here with other content (nothing of it stored), with anything else when it
       * could not be stored now (the database refused it: tried again).
       */
      receive: (b: BatchPayload, manifest: string, payloadRef: string) => Promise<void>
      /** Called once a pin event's payload is recorded as refused, so the aggregator frees that event's pins. */
      refused: (p: PinnedBatch) => void
      /** The blobs a stored batch's data announces, to be fetched before its messages can be confirmed. */
      announced: (blobs: AnnouncedBlob[]) => void
      /**
       * While held, no batch is downloaded (downloads under way finish): each waits, without a retry or a log line,
       * and goes on at once when it is released. (The admin routes' IPFS hold.)
       */
      reads?: Gate
    },
  ) {}

  /** Batches pinned on chain that this node neither sent nor has yet (after a restart): fetch them again. */
  start(): void {
    for (const p of this.deps.pins.broadcastBatchesNotHeld()) this.fetch(p)
  }

  fetch(p: PinnedBatch): void {
    const key = `${p.batchId}/${p.batchHash}/${p.payloadRef}`
    if (this.stopped || this.deps.batches.holds(p.batchId, p.batchHash, p.payloadRef)) return
    if (this.inFlight.has(key)) {
      // Another pin event naming the same payload: judged once that fetch ends (a refusal is per event: its pins, its
      // transaction id), or skipped then if the payload was stored.
      const queued = this.queued.get(key)
      if (queued) queued.push(p)
      else this.queued.set(key, [p])
      return
    }
    const run = this.run(p)
      .catch((err: unknown) => {
        // A bug, since run() retries what fails; the pins stay and the batch is fetched again at the next start.
        if (!this.stopped) this.deps.log(`batch ${p.batchId}: cannot be stored: ${errorMessage(err)}`)
      })
      .finally(() => {
        this.inFlight.delete(key)
        const queued = this.queued.get(key)
        this.queued.delete(key)
        for (const q of queued ?? []) this.fetch(q)
      })
    this.inFlight.set(key, run)
  }

  /** Abandons downloads and retries in flight (they resume at the next start) and waits for them to end. */
  async stop(): Promise<void> {
    this.stopped = true
    this.abort.abort()
    await Promise.all(this.inFlight.values())
  }

  private async run(p: PinnedBatch): Promise<void> {
    const backoff = new Backoff(RETRY_MIN_MS, RETRY_MAX_MS)
    while (!this.stopped) {
      const verdict = await this.obtain(p, backoff)
      if (!verdict) return
      try {
        await (verdict.ok ? this.store(verdict.batch, verdict.manifest, p) : this.refuse(p, verdict.reason))
      } catch (err) {
        if (this.stopped) return
        await this.storeFailed(err, backoff)
        continue
      }
      if (this.storeProblem !== undefined) {
        this.storeProblem = undefined
        this.deps.log('batch fetcher: storing batches again')
      }
      return
    }
  }

  /** Downloads and verifies, retrying an unreachable store; undefined once the fetcher stops. */
  private async obtain(p: PinnedBatch, backoff: Backoff): Promise<Verdict | undefined> {
    if (!this.deps.storage.validRef(p.payloadRef)) return { ok: false, reason: `payload reference ${JSON.stringify(p.payloadRef)} is not a shared-storage reference` }
    for (;;) {
      if (this.stopped) return undefined
      if (this.deps.reads?.held) {
        await this.deps.reads.whenOpen(this.abort.signal)
        continue
      }
      let text: string
      try {
        text = await this.download(p.payloadRef)
      } catch (err) {
        if (this.stopped) return undefined
        if (isParleyError(err, 'BAD_PEER_DATA')) return { ok: false, reason: err.message }
        const problem = errorMessage(err)
        if (backoff.failed(problem)) this.deps.log(`batch ${p.batchId}: cannot download ${p.payloadRef} yet: ${problem}; retrying`)
        await sleep(backoff.next(), this.abort.signal)
        continue
      }
      let batch: BatchPayload
      try {
        batch = parseBatch(text)
      } catch (err) {
        return { ok: false, reason: errorMessage(err) }
      }
      const checked = checkBatch(batch, p)
      if (!checked.ok) return { ok: false, reason: checked.reason }
      const kind = notBroadcast(batch)
      return kind === undefined ? { ok: true, batch, manifest: checked.manifest } : { ok: false, reason: kind }
    }
  }

  /** Waits before storing again: until the database takes writes, while the disk is full; a backoff otherwise. */
  private async storeFailed(err: unknown, backoff: Backoff): Promise<void> {
    const problem = errorMessage(err)
    if (problem !== this.storeProblem) {
      this.storeProblem = problem
      this.deps.log(`batch fetcher: cannot store batches, retrying: ${problem}`)
    }
    await this.deps.db.beforeRetry(backoff, this.abort.signal)
  }

  private async download(ref: string): Promise<string> {
    const chunks: Uint8Array[] = []
    let size = 0
    for await (const chunk of this.deps.storage.download(ref, this.abort.signal)) {
      size += chunk.length
      if (size > MAX_BATCH_PAYLOAD_BYTES) throw new ParleyError('BAD_PEER_DATA', `batch payload ${ref} is larger than ${MAX_BATCH_PAYLOAD_BYTES} bytes`)
      chunks.push(chunk)
    }
    return Buffer.concat(chunks).toString('utf8')
  }

  private async store(b: BatchPayload, manifest: string, p: PinnedBatch): Promise<void> {
    try {
      await this.deps.receive(b, manifest, p.payloadRef)
    } catch (err) {
      // Ids it carries are held here with other content: nothing of it was stored.
      if (isParleyError(err, 'BAD_PEER_DATA')) return this.refuse(p, err.message)
      throw err
    }
    if (p.signer === b.key && this.deps.identities.byVerifier('ethereum_address', b.key) !== undefined) {
      this.deps.announced(b.data.flatMap((d) => (d.blob?.public ? [{ hash: d.blob.hash, size: d.blob.size, public: d.blob.public }] : [])))
    }
  }

  /** Records the batch as refused; logged once it is recorded, so a retried record is not logged twice. */
  private async refuse(p: PinnedBatch, reason: string): Promise<void> {
    await this.deps.db.transaction((tx) =>
      this.deps.batches.insert(tx, {
        id: p.batchId,
        type: 'broadcast',
        namespace: '',
        author: '',
        key: p.signer,
        created: '1970-01-01T00:00:00Z' as BatchPayload['created'],
        hash: p.batchHash,
        manifest: '{"messages":[]}',
        txId: p.txId,
        payloadRef: p.payloadRef,
        state: 'refused',
        local: false,
        reason,
      }),
    )
    this.deps.log(`batch ${p.batchId} pinned by ${p.signer} refused: ${reason}`)
    this.deps.refused(p)
  }
}

/**
 * Why a payload read from shared storage is no broadcast batch. A batch's hash covers its messages, not its `type`: a
 * private batch's author could publish it (as it is, or called a broadcast) and pin its pair with that reference. Stored
 * from there, it would stand on members that fetched it first for the batch its group's members are delivered, and be
 * decided by other pins or rules there: refused instead, on every member alike, whatever it holds.
 */
function notBroadcast(b: BatchPayload): string | undefined {
  if (b.type !== 'broadcast') return `a ${b.type} batch cannot be published in shared storage`
  const m = b.messages.find((x) => batchTypeOf(x) !== 'broadcast')
  return m && `message ${m.header.id}: a ${m.header.type} message cannot travel in a broadcast batch`
}

function withoutListenerCap(a: AbortController): AbortController {
  setMaxListeners(0, a.signal)
  return a
}
