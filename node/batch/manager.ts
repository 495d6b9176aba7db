import { newId, type BatchId, type TxId } from '../core/ids.js'
import { now } from '../core/time.js'
import { broadcastContext } from '../core/hashes.js'
import { errorMessage } from '../core/errors.js'
import { Backoff, sleep } from '../core/backoff.js'
import type { Database } from '../db/database.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import type { DataRepo } from '../db/repos/data.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { Chain } from '../chain/types.js'
import type { SharedStorage } from '../storage/shared-storage.js'
import type { MessageSink } from '../messaging/sender.js'
import { batchMessage, serializeBatch } from './payload.js'
import { sealManifest } from './verify.js'
import type { BatchConfig } from './config.js'
import type { BlobPublisher } from './blob-publisher.js'
import { type BatchRecord, type LocalIdentity, type Message, type BatchPayload } from '../model/index.js'

interface Deps {
  db: Database
  messages: MessagesRepo
  data: DataRepo
  batches: BatchesRepo
  storage: SharedStorage
  chain: Chain
  self: LocalIdentity
  config: BatchConfig
  blobs: BlobPublisher
  log: (line: string) => void
}

const RETRY_MIN_MS = 500
const RETRY_MAX_MS = 10_000

/**
 * Collects this node's pinned broadcasts into batches, one assembler per (namespace, author, key), seals each
 * batch in one transaction (manifest hash, messages assigned), then dispatches it: blobs not yet published,
 * then the payload, to shared storage; then one `pinBatch` whose contexts are sha256(topic) per topic per
 * message. Dispatch is serial per assembler so pin order follows send order; everything resumes from the
 * database after a restart.
 */
export class BatchManager implements MessageSink {
  readonly name = 'batch manager'
  private readonly assemblers = new Map<string, Assembler>()
  private stopped = false
  /** Aborts retry waits and pin submissions in flight when the manager stops. */
  private readonly abort = new AbortController()

  constructor(private readonly deps: Deps) {}

  /** Picks up what a previous run left: sealed batches not yet pinned, then accepted messages not yet batched. */
  start(): void {
    for (const b of this.deps.batches.undispatched()) this.assembler(b.namespace, b.author, b.key).dispatchLater(b)
    for (const m of this.deps.messages.unbatched()) this.accepted(m, 1000)
  }

  accepted(m: Message, bytes: number): void {
    if (this.stopped) return
    this.assembler(m.header.namespace, m.header.author, m.header.key).add(m.header.id, bytes)
  }

  /**
   * Stops sealing and dispatching and waits for the step in flight to end: a seal commits or not; a dispatch stops
   * waiting for its pin (a sealed or uploaded batch is dispatched again at the next start).
   */
  async stop(): Promise<void> {
    this.stopped = true
    this.abort.abort()
    await Promise.all([...this.assemblers.values()].map((a) => a.stop()))
  }

  private assembler(namespace: string, author: string, key: string): Assembler {
    const k = `${namespace}\u0000${author}\u0000${key}`
    let a = this.assemblers.get(k)
    if (!a) {
      a = new Assembler(this.deps, namespace, author, key, () => this.stopped, this.abort.signal)
      this.assemblers.set(k, a)
    }
    return a
  }
}

class Assembler {
  private queue: { id: Message['header']['id']; bytes: number }[] = []
  private queuedBytes = 0
  private timer: NodeJS.Timeout | undefined
  /** Seals and dispatches run one after another on this chain of promises. */
  private work: Promise<void> = Promise.resolve()

  constructor(
    private readonly deps: Deps,
    private readonly namespace: string,
    private readonly author: string,
    private readonly key: string,
    private readonly stopped: () => boolean,
    private readonly signal: AbortSignal,
  ) {}

  add(id: Message['header']['id'], bytes: number): void {
    this.queue.push({ id, bytes })
    this.queuedBytes += bytes
    if (this.queue.length >= this.deps.config.size || this.queuedBytes >= this.deps.config.payloadLimit) this.cut()
    else if (!this.timer) this.timer = setTimeout(() => this.cut(), this.deps.config.timeoutMs)
  }

  dispatchLater(b: BatchRecord): void {
    this.enqueue(() => this.dispatch(b.id))
  }

  /**
   * Runs steps one after another. A step that fails (only the database can make it) is logged and the chain goes on:
   * its messages or batch stay recorded as they were and are taken up again at the next start.
   */
  private enqueue(step: () => Promise<void>): void {
    this.work = this.work.then(step).catch((err: unknown) => {
      if (!this.stopped()) this.deps.log(`batch: ${this.namespace}/${this.author}: ${errorMessage(err)}; left for the next start`)
    })
  }

  /** Clears the pending timeout and answers the work in flight, to be awaited. */
  stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    return this.work
  }

  /** Takes the next batch's worth of messages off the queue and schedules its seal and dispatch. */
  private cut(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    while (this.queue.length > 0) {
      const take: typeof this.queue = []
      let bytes = 0
      while (this.queue.length > 0 && take.length < this.deps.config.size && (take.length === 0 || bytes + this.queue[0]!.bytes <= this.deps.config.payloadLimit)) {
        const next = this.queue.shift()!
        bytes += next.bytes
        take.push(next)
      }
      this.queuedBytes -= bytes
      const ids = take.map((t) => t.id)
      this.enqueue(async () => {
        const batchId = await this.seal(ids)
        if (batchId) await this.dispatch(batchId)
      })
      // A partial last batch waits for its timeout unless the queue was cut because it was full.
      if (this.queue.length > 0 && this.queue.length < this.deps.config.size && this.queuedBytes < this.deps.config.payloadLimit) {
        this.timer = setTimeout(() => this.cut(), this.deps.config.timeoutMs)
        return
      }
    }
  }

  private async seal(ids: Message['header']['id'][]): Promise<BatchId | undefined> {
    const { db, messages, data, batches, self } = this.deps
    const batchId = newId<BatchId>()
    const txId = newId<TxId>()
    const created = now()
    const sealed = await db.transaction((tx) => {
      const msgs = ids.map((id) => messages.get(id, tx)).filter((m): m is Message => m !== undefined && m.batch === undefined)
      if (msgs.length === 0) return false
      const items = dedupe(msgs.flatMap((m) => m.data.map((r) => data.get(r.id, tx)!)))
      const { manifest, hash } = sealManifest({ id: batchId, tx: { type: 'batch_pin', id: txId }, messages: msgs.map(batchMessage), data: items })
      batches.insert(tx, {
        id: batchId,
        type: 'broadcast',
        namespace: this.namespace,
        author: this.author,
        key: this.key,
        node: self.nodeDid,
        created,
        hash,
        manifest,
        txId,
        state: 'sealed',
        local: true,
      })
      for (const m of msgs) messages.assignBatch(tx, m.header.id, batchId, txId)
      return true
    })
    return sealed ? batchId : undefined
  }

  /** Upload then pin, retrying each step until it succeeds: the batch is durable, so nothing is lost meanwhile. */
  private async dispatch(batchId: BatchId): Promise<void> {
    const { db, batches, storage, chain, log } = this.deps
    const backoff = new Backoff(RETRY_MIN_MS, RETRY_MAX_MS)
    for (;;) {
      if (this.stopped()) return
      const b = batches.get(batchId)
      if (!b || b.state === 'pinned') return
      try {
        let payload = this.payloadOf(b)
        let ref = b.payloadRef
        if (b.state === 'sealed' || !ref) {
          if (await this.deps.blobs.publishAll(payload.data)) payload = this.payloadOf(b)
          ref = await storage.upload(new TextEncoder().encode(serializeBatch(payload)), 'batch.json')
          await db.transaction((tx) => batches.setUploaded(tx, batchId, ref!))
        }
        const contexts = payload.messages.flatMap((m) => m.header.topics.map((t) => broadcastContext(t)))
        const { txHash } = await chain.submitPinBatch({ txId: b.txId, batchId, batchHash: b.hash, payloadRef: ref, contexts }, this.signal)
        await db.transaction((tx) => batches.setPinned(tx, batchId, txHash))
        if (backoff.retrying) log(`batch ${batchId}: dispatched after retrying`)
        return
      } catch (err) {
        if (this.stopped()) return
        const problem = errorMessage(err)
        if (backoff.failed(problem)) log(`batch ${batchId}: dispatch failed, retrying: ${problem}`)
        await sleep(backoff.next(), this.signal)
      }
    }
  }

  /** Rebuilds the payload in exactly the order its manifest was sealed in, so the hash still matches after a restart. */
  private payloadOf(b: BatchRecord): BatchPayload {
    const manifest = JSON.parse(b.manifest) as { messages: { id: string }[]; data: { id: string }[] }
    const msgs = manifest.messages.map((m) => this.deps.messages.get(m.id)).filter((m): m is Message => m !== undefined)
    const items = this.deps.data.getMany(manifest.data.map((d) => d.id))
    return {
      id: b.id,
      type: 'broadcast',
      namespace: b.namespace,
      ...(b.node ? { node: b.node } : {}),
      author: b.author,
      key: b.key,
      created: b.created,
      hash: b.hash,
      tx: { type: 'batch_pin', id: b.txId },
      messages: msgs.map(batchMessage),
      data: items,
    }
  }
}

function dedupe<T extends { id: string }>(items: T[]): T[] {
  const seen = new Set<string>()
  return items.filter((d) => (seen.has(d.id) ? false : (seen.add(d.id), true)))
}
