import { broadcastContext } from '../core/hashes.js'
import { errorMessage, isParleyError } from '../core/errors.js'
import type { BatchId } from '../core/ids.js'
import { now, type Timestamp } from '../core/time.js'
import type { Database, Tx } from '../db/database.js'
import type { PinsRepo } from '../db/repos/pins.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import type { DataRepo } from '../db/repos/data.js'
import type { EventsRepo } from '../db/repos/events.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import type { BlobsRepo } from '../db/repos/blobs.js'
import type { BlobRefsRepo } from '../db/repos/blob-refs.js'
import type { DataValidator } from '../data/validator.js'
import { IndexedManifest } from './manifest.js'
import { claimPendingBefore } from '../identity/pending.js'
import type { DefinitionHandler } from '../definitions/types.js'
import { type Pin, type BatchRecord, type NodeEvent, datatypeDefinitionTopic, type Data, type Message } from '../model/index.js'

export interface AggregatorDeps {
  db: Database
  pins: PinsRepo
  batches: BatchesRepo
  messages: MessagesRepo
  data: DataRepo
  events: EventsRepo
  identities: IdentitiesRepo
  blobs: BlobsRepo
  refs: BlobRefsRepo
  validator: DataValidator
  definitions: DefinitionHandler[]
  log: (line: string) => void
  /** Told after each durable pass: messages confirmed or rejected, and the events written. */
  onOutcome: (o: { confirmed: Message[]; rejected: { message: Message; reason: string }[]; events: NodeEvent[] }) => void
}

const PAGE = 200

/**
 * Turns pins into confirmations, in chain order. A message is confirmed when its batch is here and verified,
 * its blobs are held, its signer is the identity it claims to be, its data conforms to its datatypes, and no
 * earlier pin on any of its contexts is still waiting: on one topic, nothing overtakes. Waiting pins are
 * skipped, and the walk rewinds to them when what they wait for arrives (a batch, a blob, an identity, a
 * datatype). Each page of pins is one transaction: O(1) statements per pin.
 */
export class Aggregator {
  private offset = 0
  private running = false
  private again = false
  private readonly manifests = new Map<string, IndexedManifest>()
  private idle: Promise<void> = Promise.resolve()
  private settleIdle: () => void = () => {}
  private stopped = false
  private retryTimer: NodeJS.Timeout | undefined
  readonly name = 'aggregator'

  constructor(private readonly deps: AggregatorDeps) {}

  start(): void {
    const first = this.deps.pins.minUndispatchedSeq()
    this.offset = first !== undefined ? first - 1 : this.deps.pins.maxSeq()
    this.wake()
  }

  /** Ends after the pass in flight (its transaction commits or fails whole); later wake-ups are ignored. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.retryTimer) clearTimeout(this.retryTimer)
    await this.whenIdle()
  }

  /** New pins arrived after the current position. */
  wake(): void {
    if (this.stopped) return
    if (this.running) {
      this.again = true
      return
    }
    this.running = true
    this.idle = new Promise((r) => (this.settleIdle = r))
    void this.run()
  }

  /** A batch was stored (or refused): its pins may now be decided, so walk again from its first waiting pin. */
  batchArrived(batchId: BatchId): void {
    this.rewind(this.deps.pins.minUndispatchedSeqOfBatch(batchId))
  }

  /**
   * Something any waiting pin may depend on has changed (a blob reference was settled, say): walk again from the
   * first waiting pin.
   */
  recheckWaiting(): void {
    this.rewind(this.deps.pins.minUndispatchedSeq())
  }

  private rewind(seq: number | undefined): void {
    if (seq !== undefined) this.offset = Math.min(this.offset, seq - 1)
    this.wake()
  }

  /** Resolves once no pass is running (tests and shutdown). */
  whenIdle(): Promise<void> {
    return this.running ? this.idle : Promise.resolve()
  }

  private async run(): Promise<void> {
    try {
      do {
        this.again = false
        while (!this.stopped) {
          const page = this.deps.pins.undispatchedAfter(this.offset, PAGE)
          if (page.length === 0) break
          // Claim the page before walking it: a batch arriving during the pass (too late for it) rewinds below it.
          this.offset = page[page.length - 1]!.seq
          let result: { definitionSettled: boolean }
          try {
            result = await this.pass(page)
          } catch (err) {
            this.offset = Math.min(this.offset, page[0]!.seq - 1)
            throw err
          }
          // A definition changes what later pins may depend on (an identity, a datatype): walk the waiting ones again.
          if (result.definitionSettled) this.offset = Math.min(this.offset, (this.deps.pins.minUndispatchedSeq() ?? this.offset + 1) - 1)
        }
      } while (this.again)
    } catch (err) {
      if (!this.stopped) {
        this.deps.log(`aggregator: pass failed, will retry: ${errorMessage(err)}`)
        this.retryTimer = setTimeout(() => this.rewind(undefined), 1000)
      }
    } finally {
      this.running = false
      this.settleIdle()
    }
  }

  private async pass(page: Pin[]): Promise<{ definitionSettled: boolean }> {
    const confirmed: Message[] = []
    const rejected: { message: Message; reason: string }[] = []
    const events: NodeEvent[] = []
    const after: (() => void)[] = []
    let definitionSettled = false
    const at = now()
    await this.deps.db.transaction((tx) => {
      const done = new Set<string>()
      // A page holds many pins of few batches: read each batch once.
      const batches = new Map<string, BatchRecord | undefined>()
      const batchOf = (id: string): BatchRecord | undefined => {
        if (!batches.has(id)) batches.set(id, this.deps.batches.get(id))
        return batches.get(id)
      }
      for (const pin of page) {
        if (done.has(`${pin.batchId}:${pin.index}`)) continue
        const outcome = this.processPin(tx, pin, batchOf(pin.batchId), at)
        if (!outcome) continue
        for (let i = outcome.firstPin; i < outcome.firstPin + outcome.message.header.topics.length; i++) done.add(`${pin.batchId}:${i}`)
        if (outcome.message.header.type === 'definition') definitionSettled = true
        if (outcome.kind === 'confirmed') confirmed.push(outcome.message)
        else rejected.push({ message: outcome.message, reason: outcome.reason })
        events.push(...outcome.events)
        if (outcome.kind === 'confirmed' && outcome.afterCommit) after.push(outcome.afterCommit)
      }
    })
    for (const f of after) f()
    if (confirmed.length + rejected.length > 0) this.deps.onOutcome({ confirmed, rejected, events })
    return { definitionSettled }
  }

  private processPin(
    tx: Tx,
    pin: Pin,
    batch: BatchRecord | undefined,
    at: Timestamp,
  ):
    | { kind: 'confirmed'; message: Message; firstPin: number; events: NodeEvent[]; afterCommit?: () => void }
    | { kind: 'rejected'; message: Message; firstPin: number; reason: string; events: NodeEvent[] }
    | undefined {
    if (!batch || batch.state === 'refused' || batch.hash !== pin.batchHash) return undefined
    const manifest = this.manifestOf(batch)
    const place = manifest.at(pin.index)
    if (!place) return undefined
    const { entry } = place
    const message = this.deps.messages.get(entry.id, tx)
    if (!message) return undefined
    if (message.state === 'confirmed' || message.state === 'rejected') {
      this.deps.pins.markDispatched(tx, pin.batchId, entry.firstPin, entry.firstPin + entry.topics - 1)
      return undefined
    }
    // Nothing overtakes on a topic: every context of the message must have no earlier waiting pin.
    const firstSeq = this.deps.pins.firstSeqOf(tx, pin.batchId, entry.firstPin, entry.firstPin + entry.topics - 1) ?? pin.seq
    const contexts = message.header.topics.map((t) => broadcastContext(t))
    for (const ctx of contexts) if (this.deps.pins.earlierUndispatched(tx, ctx, firstSeq)) return undefined

    const reject = (reason: string) => {
      this.deps.messages.reject(tx, message.header.id, batch.id, batch.txId, at, reason)
      this.deps.pins.markDispatched(tx, pin.batchId, entry.firstPin, entry.firstPin + entry.topics - 1)
      const ev = this.deps.events.insert(tx, { type: 'message_rejected', namespace: message.header.namespace, reference: message.header.id, tx: batch.txId, topic: message.header.topics[0]!, ...(message.header.cid ? { correlator: message.header.cid } : {}) }, at)
      this.deps.log(`message ${message.header.id} rejected: ${reason}`)
      return { kind: 'rejected' as const, message: { ...message, state: 'rejected' as const, confirmed: at, rejectReason: reason, batch: batch.id, txid: batch.txId }, firstPin: entry.firstPin, reason, events: [ev] }
    }

    const expected = contexts[place.topic]
    if (pin.hash !== expected) return reject(`on-chain context ${pin.hash} is not the hash of topic ${message.header.topics[place.topic]}`)
    if (message.header.key !== pin.signer) return reject(`pinned on chain by ${pin.signer}, but the message is signed with key ${message.header.key}`)

    const data = message.data.map((r) => this.deps.data.get(r.id, tx)).filter((d): d is Data => d !== undefined)
    if (data.length !== message.data.length) return undefined

    let extraEvents: NodeEvent[] = []
    let afterCommit: (() => void) | undefined
    if (message.header.type === 'definition') {
      const handler = this.deps.definitions.find((h) => h.tag === message.header.tag)
      if (!handler) return reject(`no definition handler for tag ${message.header.tag ?? '(none)'}`)
      const out = handler.handle(tx, message, data, pin.signer, firstSeq)
      if (out.kind === 'wait') return undefined
      if (out.kind === 'reject') return reject(out.reason)
      extraEvents = out.events.map((e) => this.deps.events.insert(tx, e, at))
      afterCommit = out.afterCommit
    } else {
      const signer = this.deps.identities.byVerifier('ethereum_address', pin.signer, tx)
      if (!signer) {
        // An unknown key may belong to an org whose claim, ordered earlier, is not applied yet: only then wait.
        if (claimPendingBefore(this.deps.pins, tx, message.header.author, firstSeq)) return undefined
        return reject(`key ${pin.signer} belongs to no registered identity, and no claim for ${message.header.author} was ordered before this message`)
      }
      if (signer.did !== message.header.author) return reject(`author ${message.header.author} does not own key ${pin.signer} (it belongs to ${signer.did})`)
      for (const d of data) {
        if (d.blob) {
          if (message.header.type === 'broadcast') {
            // A broadcast blob counts once its announced reference is verified, whatever this node already holds.
            if (!d.blob.public) return reject(`data ${d.id}: blob ${d.blob.hash} has no shared-storage reference`)
            const verdict = this.deps.refs.verdict({ hash: d.blob.hash, size: d.blob.size, public: d.blob.public }, tx)
            if (!verdict) return undefined
            if (!verdict.ok) return reject(`data ${d.id}: ${verdict.reason}`)
          }
          if (!this.deps.blobs.has(d.blob.hash, tx)) return undefined
        }
        try {
          // Only datatypes whose definition was ordered before this message count, whatever arrived first here.
          this.deps.validator.validate(message.header.namespace, d, firstSeq)
        } catch (err) {
          // The datatype may be defined by a definition ordered earlier whose batch has not been applied yet.
          const definitionPending = isParleyError(err, 'UNKNOWN_DATATYPE') && this.deps.pins.earlierUndispatched(tx, broadcastContext(datatypeDefinitionTopic(message.header.namespace)), firstSeq)
          if (definitionPending) return undefined
          return reject(`data ${d.id}: ${errorMessage(err)}`)
        }
      }
    }

    this.deps.messages.confirm(tx, message.header.id, batch.id, batch.txId, at)
    this.deps.pins.markDispatched(tx, pin.batchId, entry.firstPin, entry.firstPin + entry.topics - 1)
    const ev = this.deps.events.insert(
      tx,
      { type: 'message_confirmed', namespace: message.header.namespace, reference: message.header.id, tx: batch.txId, topic: message.header.topics[0]!, ...(message.header.cid ? { correlator: message.header.cid } : {}) },
      at,
    )
    return {
      kind: 'confirmed',
      message: { ...message, state: 'confirmed', confirmed: at, batch: batch.id, txid: batch.txId },
      firstPin: entry.firstPin,
      events: [ev, ...extraEvents],
      ...(afterCommit ? { afterCommit } : {}),
    }
  }

  private manifestOf(batch: BatchRecord): IndexedManifest {
    let m = this.manifests.get(batch.id)
    if (!m) {
      m = new IndexedManifest(batch.manifest)
      if (this.manifests.size > 1000) this.manifests.clear()
      this.manifests.set(batch.id, m)
    }
    return m
  }
}

