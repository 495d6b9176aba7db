import { broadcastContext, identityTopic } from '../core/hashes.js'
import { errorMessage, isParleyError } from '../core/errors.js'
import { extend } from '../core/extend.js'
import type { BatchId, Hash, TxId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'
import type { Tx } from '../db/database.js'
import { broadcastPinOfPrivate, datatypeDefinitionTopic, registeredBefore, TAG_IDENTITY_CLAIM, type Data, type DataRef, type Identity, type Message, type NewEvent, type NodeEvent, type Pin, type Wait } from '../model/index.js'
import type { StandingQueues } from './standing.js'
import type { PinnedRef } from '../db/repos/messages.js'
import { refKey } from '../db/repos/ref-key.js'
import { orderingOf } from './ordering.js'
import { forgetCarried, takeCarried } from './forget-carried.js'
import { BatchViews, type BatchView } from './batch-views.js'
import { messageLimitProblem } from '../batch/payload.js'
import { StepAllowance } from '../data/validation-budget.js'
import type { AggregatorDeps } from './aggregator.js'
import type { StagedBatch } from './staged-batch.js'

export interface PassResult {
  confirmed: Message[]
  rejected: { message: Message; reason: string }[]
  events: NodeEvent[]
  afterCommit: (() => void)[]
  /**
   * Something settled that an earlier-read waiting pin may have been waiting for: a definition (an identity, a
   * datatype, a group) or a private nonce moving on (the next nonce's pin may have landed first, and been read).
   */
  rewindWaiting: boolean
  /**
   * By refKey (two messages may share an id): why each message that its own checks could not decide waits (blob, datatype, identity...; settled ones are not
   * here). A message its ordering holds back (ordering.ts) is not noted: that check is cheap to run again, read-only.
   */
  waits: Map<string, Wait>
}

/**
 * What the chain says of a message that no member may accept, read from every pin of its range that came with its
 * first one (one BatchPin event, stored in one transaction), before any check that can make it wait: which pin a pass
 * happens to be on when it decides (the first, or a later one after a wait for a blob or a datatype check) must not
 * change the verdict. A broadcast's contexts must be its topics' hashes (a private message's were checked against its
 * nonces already: PrivateChecks), and the message's key must have signed them. Pins of its range from a later event
 * (a re-pin) come after the verdict and decide nothing.
 */
function pinsProblem(message: Message, batchHash: Hash, pins: ReadonlyMap<number, Pin>, range: { from: number; to: number }, contexts: readonly Hash[] | undefined): string | undefined {
  // A pin naming another batch hash is not this batch's (process() passes over it too): it decides nothing here.
  const ofBatch = (p: Pin | undefined): p is Pin => p !== undefined && p.batchHash === batchHash
  let first: Pin | undefined
  for (let i = range.from; i <= range.to; i++) {
    const p = pins.get(i)
    if (ofBatch(p) && (first === undefined || p.seq < first.seq)) first = p
  }
  for (let i = range.from; i <= range.to; i++) {
    const p = pins.get(i)
    if (!ofBatch(p) || p.eventId !== first?.eventId) continue
    const topic = i - range.from
    if (contexts && p.hash !== contexts[topic]) return `on-chain context ${p.hash} is not the hash of topic ${message.header.topics[topic]}`
    if (p.signer !== message.header.key) return `pinned on chain by ${p.signer}, but the message is signed with key ${message.header.key}`
  }
  return undefined
}

type Decision =
  | { kind: 'confirm'; afterCommit?: () => void }
  | { kind: 'reject'; reason: string }
  /** Not decidable yet; the reason is what a trace shows. */
  | { kind: 'wait'; wait: Wait }

/**
 * One page of pins in one transaction. Per batch it reads the batch, its pins, its messages and its data once;
 * per message it decides in memory (the context queues say whether an earlier pin waits) and buffers the writes:
 * confirmations of a batch in one UPDATE, dispatched pins and new events in multi-row statements, written when the
 * page ends. Before anything that reads the database's view of pins or events (a definition handler, the check for
 * a pending claim or datatype definition) the buffer is written out, so every check sees exactly what it saw when
 * each write went straight to the database.
 */
export class Pass {
  private readonly batches: BatchViews
  /** Messages this pass decided, by refKey: each (id, hash) is decided on its own, whatever else shares its id. */
  private readonly settled = new Set<string>()
  private readonly signers = new Map<string, Identity | undefined>()
  private readonly pendingPins: number[] = []
  /** What messages that took their deciding batch's carried data named before (takeCarried): deleted once unnamed. */
  private readonly untaken: DataRef[] = []
  private readonly pendingEvents: NewEvent[] = []
  /** By batch id and hash: batches sharing an id are confirmed apart. Each message with its own first deciding pin. */
  private readonly pendingConfirms = new Map<string, { batchId: BatchId; txId: TxId; refs: PinnedRef[] }>()
  /** What this pass may spend on data checks on the main thread; costlier checks go to the validation worker. */
  private readonly allowance = new StepAllowance()
  readonly result: PassResult = { confirmed: [], rejected: [], events: [], afterCommit: [], rewindWaiting: false, waits: new Map() }

  constructor(
    private readonly deps: AggregatorDeps,
    private readonly queues: StandingQueues,
    private readonly tx: Tx,
    private readonly at: Timestamp,
    /** A batch stored in this transaction whose message rows are not written yet: its verdicts go to it, not to UPDATEs. */
    private readonly staged?: StagedBatch,
  ) {
    this.batches = new BatchViews(deps, tx, staged)
  }

  /** Decides what `page` allows. Its pins become the views' own (marked used as they are): not to be reused after. */
  run(page: readonly Pin[]): PassResult {
    // Only broadcast pins hold their context back; a private pin is unique and ordered by its nonce (PrivateChecks).
    for (const pin of page) if (!pin.masked) this.queues.add(pin)
    this.batches.notePage(page)
    const done = new Set<number>()
    for (const pin of page) {
      if (done.has(pin.seq)) continue
      const settled = this.process(pin)
      if (settled) for (let i = settled.range.from; i <= settled.range.to; i++) done.add(settled.pins.get(i)?.seq ?? -1)
    }
    this.flush()
    if (this.untaken.length > 0) this.deps.data.deleteUnnamed(this.tx, this.untaken.splice(0))
    const decided = (m: Message): boolean => m.state !== 'pending' || this.settled.has(refKey({ id: m.header.id, hash: m.hash }))
    for (const view of this.batches.read()) forgetCarried(this.deps, this.tx, view, decided)
    return this.result
  }

  /**
   * Decides the message behind `pin`; answers its deciding pins and their index range when it was settled (now or
   * before). A pin of a batch stored here that its key did not sign decides nothing: it no longer waits. A broadcast
   * pin of a private batch decides nothing either, and waits for its own payload.
   */
  private process(pin: Pin): { range: { from: number; to: number }; pins: ReadonlyMap<number, Pin> } | undefined {
    const view = this.batches.viewOf(pin.batchId, pin.batchHash)
    if (!view) return undefined
    // Even when the message at its index was decided already (through another batch or pin).
    if (broadcastPinOfPrivate(pin, view.record.type)) return undefined
    if (pin.signer !== view.record.key) return this.leaveForeign(pin)
    const place = view.manifest.at(pin.index)
    if (!place) return undefined
    const { entry } = place
    const range = { from: entry.firstPin, to: entry.firstPin + entry.topics - 1 }
    const message = view.messages.get(entry.id)
    if (!message) return undefined
    const key = refKey({ id: message.header.id, hash: message.hash })
    if (message.state === 'confirmed' || message.state === 'rejected' || this.settled.has(key)) {
      this.leave(view, range)
      return { range, pins: view.pins }
    }
    let firstSeq = pin.seq
    for (let i = range.from; i <= range.to; i++) firstSeq = Math.min(firstSeq, view.pins.get(i)?.seq ?? firstSeq)
    // First its place in the chain's order (ordering.ts: nothing overtakes on a topic), then its own checks (decide).
    // An ordering wait is not kept (a trace runs that check again, read-only); its own checks' reason is.
    const ordering = orderingOf(message, view.record, view.pins, range, firstSeq, this.queues, this.deps.privateChecks, this.tx)
    if (ordering.kind === 'wait' || ordering.kind === 'unordered') return undefined
    const advance = ordering.kind === 'open' ? ordering.advance : undefined
    const decision: Decision = ordering.kind === 'reject' ? ordering : this.decide(view, message, range, ordering.contexts, firstSeq)
    if (decision.kind === 'confirm' && message.header.tag === TAG_IDENTITY_CLAIM) this.noteRegistration(message)
    if (decision.kind === 'wait') return this.waits(message, decision.wait)
    // Confirmed or rejected, a private message's pins are used: its sequences move on (a rejection does not hold them).
    advance?.(this.tx)
    const carried = view.carried.get(entry.id)
    if (carried) this.untaken.push(...takeCarried(this.deps, this.tx, { id: message.header.id, hash: message.hash }, carried, view.record.id))
    this.settled.add(key)
    this.result.waits.delete(key)
    this.leave(view, range)
    const { record } = view
    const common = { namespace: message.header.namespace, reference: message.header.id, referenceHash: message.hash, tx: record.txId, topic: message.header.topics[0]!, ...(message.header.cid ? { correlator: message.header.cid } : {}) }
    // A message of the staged batch has no row yet: it is written once, as decided (StagedBatch.write).
    const staged = this.staged !== undefined && this.staged.record === record ? this.staged : undefined
    if (decision.kind === 'reject') {
      const rejected = extend(message, { state: 'rejected' as const, confirmed: this.at, rejectReason: decision.reason, batch: record.id, txid: record.txId })
      if (staged) staged.decided(rejected, firstSeq)
      else this.deps.messages.reject(this.tx, { id: message.header.id, hash: message.hash }, record.id, record.txId, this.at, decision.reason, firstSeq)
      this.pendingEvents.push({ type: 'message_rejected', ...common })
      this.result.rejected.push({ message: rejected, reason: decision.reason })
    } else {
      const confirmed = extend(message, { state: 'confirmed' as const, confirmed: this.at, batch: record.id, txid: record.txId })
      if (staged) staged.decided(confirmed, firstSeq)
      else {
        const batchKey = `${record.id}/${record.hash}`
        const batch = this.pendingConfirms.get(batchKey) ?? { batchId: record.id, txId: record.txId, refs: [] }
        batch.refs.push({ id: message.header.id, hash: message.hash, pinSeq: firstSeq })
        this.pendingConfirms.set(batchKey, batch)
      }
      this.pendingEvents.push({ type: 'message_confirmed', ...common })
      if (decision.afterCommit) this.result.afterCommit.push(decision.afterCommit)
      this.result.confirmed.push(confirmed)
    }
    if (advance || message.header.type === 'definition') this.result.rewindWaiting = true
    return { range, pins: view.pins }
  }

  /**
   * A pin naming a batch stored here that another key signed (a squatter's, or a copy of the batch's pin): it decides
   * nothing of the batch's messages, and, its payload being here, it no longer holds its context.
   */
  private leaveForeign(pin: Pin): undefined {
    if (pin.dispatched) return undefined
    pin.dispatched = true
    this.pendingPins.push(pin.seq)
    if (!pin.masked && this.queues.leave(pin)) this.result.rewindWaiting = true
    return undefined
  }

  /**
   * An org's claim signed with its key was confirmed: that key is a member's from the claim's first pin on (the claim
   * handler registered it, or refused it when the key or name was taken: then nothing changes).
   */
  private noteRegistration(message: Message): void {
    const key = message.header.key
    const identity = this.deps.identities.byVerifier('ethereum_address', key, this.tx)
    if (identity?.messages.claim !== message.header.id) return
    this.queues.registered(key, identity.registeredAfter ?? 0)
    this.result.rewindWaiting = true
  }

  private decide(view: BatchView, message: Message, range: { from: number; to: number }, contexts: readonly Hash[] | undefined, firstSeq: number): Decision {
    // A message past a network-wide limit is rejected as a message: its pins are consumed, its topics move on.
    const overLimit = messageLimitProblem(message)
    if (overLimit) return { kind: 'reject', reason: overLimit }
    const pinned = pinsProblem(message, view.record.hash, view.pins, range, contexts)
    if (pinned) return { kind: 'reject', reason: pinned }
    const data = message.data.map((r) => view.data.get(refKey(r))).filter((d): d is Data => d !== undefined)
    if (data.length !== message.data.length) return { kind: 'wait', wait: { reason: 'batch', detail: 'its data is not all here' } }
    if (message.header.type === 'definition' || message.header.type === 'groupinit') return this.decideDefinition(message, data, firstSeq)

    // The key every pin that decides it was signed with (pinsProblem).
    const key = message.header.key
    // Registered only as of its place in the chain's order: a key whose claim comes later is nobody's here, on every
    // member, whether or not the claim happened to be confirmed first.
    const known = this.signerOf(key)
    const signer = known && registeredBefore(known, firstSeq) ? known : undefined
    if (!signer) {
      // An unknown key may belong to an org whose claim, ordered earlier, is not applied yet: only then wait.
      if (this.claimPending(message.header.author, firstSeq)) return { kind: 'wait', wait: { reason: 'identity', author: message.header.author } }
      if (known) return { kind: 'reject', reason: `key ${key} was registered to ${known.did} only after this message, in the chain's order` }
      return { kind: 'reject', reason: `key ${key} belongs to no registered identity, and no claim for ${message.header.author} was ordered before this message` }
    }
    if (signer.did !== message.header.author) return { kind: 'reject', reason: `author ${message.header.author} does not own key ${key} (it belongs to ${signer.did})` }
    for (const d of data) {
      if (d.blob) {
        if (message.header.type === 'broadcast') {
          // A broadcast blob counts once its announced reference is verified, whatever this node already holds.
          if (!d.blob.public) return { kind: 'reject', reason: `data ${d.id}: blob ${d.blob.hash} has no shared-storage reference` }
          const verdict = this.deps.refs.verdict({ hash: d.blob.hash, size: d.blob.size, public: d.blob.public }, this.tx)
          if (!verdict) {
            // Its key checks out: its blobs may be fetched now (not on store for a batch of no member's key).
            this.deps.wantBlob?.({ hash: d.blob.hash, size: d.blob.size, public: d.blob.public })
            return { kind: 'wait', wait: { reason: 'blob', blob: d.blob.hash, cid: d.blob.public } }
          }
          if (!verdict.ok) return { kind: 'reject', reason: `data ${d.id}: ${verdict.reason}` }
        }
        if (!this.deps.blobs.has(d.blob.hash, this.tx)) return { kind: 'wait', wait: { reason: 'blob', blob: d.blob.hash } }
      }
      try {
        // Only datatypes whose definition was ordered before this message count, whatever arrived first here.
        const later = this.deps.validator.validateOnReceipt(message.header.namespace, d, firstSeq, this.allowance)
        if (later) {
          this.batches.prefetch(view, (m) => this.settled.has(refKey({ id: m.header.id, hash: m.hash })))
          return { kind: 'wait', wait: { reason: 'datatype', ...(d.datatype ? { datatype: d.datatype } : {}), detail: later } }
        }
      } catch (err) {
        // The datatype may be defined by a definition ordered earlier whose batch has not been applied yet.
        if (isParleyError(err, 'UNKNOWN_DATATYPE') && this.queues.earlierWaiting(broadcastContext(datatypeDefinitionTopic(message.header.namespace)), firstSeq)) {
          return { kind: 'wait', wait: { reason: 'datatype', ...(d.datatype ? { datatype: d.datatype } : {}), detail: 'a datatype definition ordered before it is not applied yet' } }
        }
        // Only a verdict about the data rejects it; this member's own trouble (a worker or compile failing) must not
        // decide what every member decides: the message waits, and is checked again at the next wake-up.
        if (!isVerdict(err)) return { kind: 'wait', wait: { reason: 'datatype', ...(d.datatype ? { datatype: d.datatype } : {}), detail: `data ${d.id} could not be checked here yet: ${errorMessage(err)}` } }
        return { kind: 'reject', reason: `data ${d.id}: ${errorMessage(err)}` }
      }
    }
    return { kind: 'confirm' }
  }

  private decideDefinition(message: Message, data: Data[], firstSeq: number): Decision {
    const handler = this.deps.definitions.find((h) => h.tag === message.header.tag)
    if (!handler) return { kind: 'reject', reason: `no definition handler for tag ${message.header.tag ?? '(none)'}` }
    // A handler reads and writes through the transaction: it must see every earlier decision of this page.
    this.flush()
    const out = handler.handle(this.tx, message, data, message.header.key, firstSeq)
    if (out.kind !== 'confirm') return out
    // What it applied (an identity, say) may change who later messages' signers are.
    this.signers.clear()
    this.pendingEvents.push(...out.events)
    return { kind: 'confirm', ...(out.afterCommit ? { afterCommit: out.afterCommit } : {}) }
  }

  /** Its own checks cannot decide the message yet: why, for its trace (the last check that held it in this pass counts). */
  private waits(message: Message, wait: Wait): undefined {
    this.result.waits.set(refKey({ id: message.header.id, hash: message.hash }), wait)
    return undefined
  }

  private signerOf(key: string): Identity | undefined {
    if (!this.signers.has(key)) this.signers.set(key, this.deps.identities.byVerifier('ethereum_address', key, this.tx))
    return this.signers.get(key)
  }

  /**
   * Whether a claim for `did` was pinned before `seq` and still waits (identity/pending's rule): asked of the queues,
   * which hold every pin below `seq` as this page has left it.
   */
  private claimPending(did: string, seq: number): boolean {
    return this.queues.earlierWaiting(broadcastContext(identityTopic(did)), seq, true)
  }

  /** The message's pins no longer wait: written at the next flush, gone from the context queues now. */
  private leave(view: BatchView, range: { from: number; to: number }): void {
    for (let i = range.from; i <= range.to; i++) {
      const p = view.pins.get(i)
      if (!p || p.dispatched || broadcastPinOfPrivate(p, view.record.type)) continue
      p.dispatched = true
      this.pendingPins.push(p.seq)
      // A signer's earlier pin decided may settle the standing of its later ones (standing.ts): what they held is free.
      // A masked pin used may be the first of its hash, which a later copy of it waits for (PrivateChecks reads that
      // from the table, written only at the flush): walk the waiting pins again once it is written.
      if (p.masked) this.result.rewindWaiting = true
      else if (this.queues.leave(p)) this.result.rewindWaiting = true
    }
  }

  /** Writes what the page decided so far: dispatched pins, confirmations per batch, new events (in order). */
  private flush(): void {
    if (this.pendingPins.length > 0) this.deps.pins.markDispatchedSeqs(this.tx, this.pendingPins.splice(0))
    for (const c of this.pendingConfirms.values()) this.deps.messages.confirmMany(this.tx, c.refs, c.batchId, c.txId, this.at)
    this.pendingConfirms.clear()
    if (this.pendingEvents.length > 0) this.result.events.push(...this.deps.events.insertMany(this.tx, this.pendingEvents.splice(0), this.at))
  }
}

/** Failures that say something about the data itself, the same on every member: the rest are this member's. */
/** A validation failure that is a verdict on the data (reject it), not a reason to wait. */
export function isVerdict(err: unknown): boolean {
  return isParleyError(err, 'SCHEMA_VALIDATION_FAILED') || isParleyError(err, 'UNKNOWN_DATATYPE') || isParleyError(err, 'INVALID_FIELD')
}
