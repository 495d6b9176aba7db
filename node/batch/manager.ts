import { setMaxListeners } from 'node:events'
import type { Database } from '../db/database.js'
import type { MessageRef, MessagesRepo } from '../db/repos/messages.js'
import { refKey } from '../db/repos/ref-key.js'
import type { DataRepo } from '../db/repos/data.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { EventsRepo } from '../db/repos/events.js'
import type { Chain } from '../chain/index.js'
import type { SharedStorage } from '../storage/shared-storage.js'
import { batchTypeOf, type BatchRecord, type BatchType, type Data, type DataRef, type LocalIdentity, type Message, type NodeEvent, type TxType } from '../model/index.js'
import type { Hash } from '../core/ids.js'
import type { MessageSink } from '../messaging/sender.js'
import { payloadEstimate } from '../messaging/sender.js'
import { batchPayload } from './payload.js'
import type { BatchConfig } from './config.js'
import type { BlobPublisher } from './blob-publisher.js'
import type { Dispatcher, SealedBatch } from './dispatcher.js'
import { BroadcastDispatcher } from './broadcast-dispatcher.js'
import { Assembler, type Accepted, type RetryPace, type SealedBatchHolder } from './assembler.js'
import { DispatchProgress } from './progress.js'
import type { OperationRecorder } from '../operations/recorder.js'

export interface BatchManagerDeps {
  db: Database
  messages: MessagesRepo
  data: DataRepo
  batches: BatchesRepo
  /** Sealing a pinned batch writes its `transaction_submitted` event here, in the seal's transaction. */
  events: EventsRepo
  /** Told of the events a seal wrote, once it is durable. */
  published: (events: readonly NodeEvent[]) => void
  storage: SharedStorage
  chain: Chain
  self: LocalIdentity
  config: BatchConfig
  blobs: BlobPublisher
  log: (line: string) => void
  /** Dispatchers besides the broadcast one (private messaging registers its own). */
  dispatchers?: Dispatcher[]
  /** Told of each sealed batch in its seal's transaction, for the aggregator (see SealedBatchHolder). */
  recent?: SealedBatchHolder
  /** Where pins and uploads are also recorded as operations. */
  operationRecorder?: OperationRecorder
  /** The waits between a failed dispatch's tries (the assembler's DISPATCH_RETRY unless given). */
  retry?: RetryPace
}

/**
 * Collects this node's pinned messages into batches, one assembler per (batch type, namespace, author, key), and
 * hands each sealed batch to the dispatcher of its type (FireFly's batch manager): broadcast to shared storage,
 * private over the exchange. Sealing is one transaction over what was accepted, kept in memory; the next batch is
 * sealed while earlier ones upload and pin, and pins go to the chain in the order batches were sealed. Everything
 * resumes from the database after a restart.
 */
export class BatchManager implements MessageSink {
  readonly name = 'batch manager'
  private readonly assemblers = new Map<string, Assembler>()
  private readonly dispatchers = new Map<BatchType, Dispatcher>()
  private stopped = false
  /** This member's pinned batches on their way: uploaded yet, pin sent yet (what a trace shows before the pin is mined). */
  readonly progress = new DispatchProgress()
  /** Aborts retry waits, uploads and pin submissions in flight when the manager stops. */
  private readonly abort = new AbortController()

  constructor(private readonly deps: BatchManagerDeps) {
    // Every dispatch in flight waits on this one signal (retry waits, uploads, pins): many listeners are expected.
    setMaxListeners(0, this.abort.signal)
    this.register(new BroadcastDispatcher({ storage: deps.storage, data: deps.data, blobs: deps.blobs }))
    for (const d of deps.dispatchers ?? []) this.register(d)
  }

  register(d: Dispatcher): void {
    this.dispatchers.set(d.type, d)
  }

  /** Picks up what a previous run left: sealed batches not yet pinned (in seal order), then messages not yet sealed. */
  start(): void {
    for (const b of this.deps.batches.undispatched()) {
      const sealed = this.rebuild(b)
      this.assemblerFor(b.type, b.namespace, b.author, b.key, b.group, sealed.payload.messages[0]?.header.txtype).resume(sealed)
    }
    const waiting = this.deps.messages.unbatched()
    const data = this.deps.data.byRefs(waiting.flatMap((m) => m.data))
    for (const m of waiting) {
      const items = m.data.map((r) => data.get(refKey(r))).filter((d): d is Data => d !== undefined)
      this.accepted(m, items, payloadEstimate(m, items))
    }
  }

  accepted(m: Message, data: readonly Data[], bytes: number): void {
    if (this.stopped) return
    const a: Accepted = { message: m, data, bytes, urgent: m.header.type === 'definition' }
    this.assemblerFor(batchTypeOf(m), m.header.namespace, m.header.author, m.header.key, m.header.group, m.header.txtype).add(a)
  }

  /**
   * Stops sealing and dispatching and waits for the steps in flight to end: a seal commits or not; a dispatch stops
   * waiting for its upload or pin (a sealed batch is dispatched again at the next start).
   */
  async stop(): Promise<void> {
    this.stopped = true
    this.abort.abort()
    await Promise.all([...this.assemblers.values()].map((a) => a.stop()))
  }

  /**
   * One assembler per (type, namespace, author, key, group, txtype): a private batch carries one group, and a pinned
   * batch never carries an unpinned message, nor an unpinned batch a pinned one.
   */
  private assemblerFor(type: BatchType, namespace: string, author: string, key: string, group: Hash | undefined, txtype: TxType = 'batch_pin'): Assembler {
    const k = `${type}\u0000${namespace}\u0000${author}\u0000${key}\u0000${group ?? ''}\u0000${txtype}`
    let a = this.assemblers.get(k)
    if (!a) {
      const dispatcher = this.dispatchers.get(type)
      if (!dispatcher) throw new Error(`no dispatcher for ${type} batches`)
      a = new Assembler({ ...this.deps, dispatcher, signal: this.abort.signal, stopped: () => this.stopped, progress: this.progress }, { type, namespace, author, key, ...(group ? { group } : {}), txtype })
      this.assemblers.set(k, a)
    }
    return a
  }

  private rebuild(b: BatchRecord): SealedBatch {
    return rebuildSealed(this.deps, b)
  }
}

/** A sealed batch's payload from the database, in exactly the order its manifest was sealed in (pins included). */
export function rebuildSealed(deps: { messages: MessagesRepo; data: DataRepo }, b: BatchRecord): SealedBatch {
  const manifest = JSON.parse(b.manifest) as { messages: MessageRef[]; data: DataRef[] }
  // By id and hash: a peer may have sent a message of its own under one of these ids.
  const msgs = deps.messages.byRefs(manifest.messages)
  const messages = manifest.messages.map((m) => msgs.get(refKey(m))).filter((m): m is Message => m !== undefined)
  return { record: b, payload: batchPayload(b, messages, deps.data.getMany(manifest.data)) }
}

