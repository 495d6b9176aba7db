import { timestampSortKey, formatTimestamp } from '../core/time.js'
import type { BatchId } from '../core/ids.js'
import type { BlobsRepo } from '../db/repos/blobs.js'
import type { BlobRefsRepo } from '../db/repos/blob-refs.js'
import type { DataRepo } from '../db/repos/data.js'
import type { DeliveriesRepo, Delivery } from '../db/repos/deliveries.js'
import type { EventsRepo } from '../db/repos/events.js'
import type { BatchRecord, Message, StoredBlockchainEvent, TraceStep, TraceStepName } from '../model/index.js'
import type { BatchProgress } from '../batch/progress.js'

export interface TimelineDeps {
  data: DataRepo
  blobs: BlobsRepo
  refs: BlobRefsRepo
  deliveries: DeliveriesRepo
  events: EventsRepo
  /** The sender's pinned batches on their way (BatchManager.progress): uploaded and pin sent, before the pin is recorded. */
  progress: (batchId: BatchId) => BatchProgress | undefined
  /** A test control holding or dropping the delivery of a batch to a peer node, if the node has such controls. */
  deliveryControl?: (batchId: BatchId, peer: string) => 'held' | 'dropped' | undefined
  /** A peer node's DID → its org's name. */
  orgOfNode: (nodeDid: string) => string
}

/** Where a message stands on this member: its batch (if any), and the BatchPin log its pins were read from (if read). */
export interface MessagePlace {
  message: Message
  batch?: BatchRecord
  /** The BatchPin log of the message's first pin, once this member has read it. */
  pinEvent?: StoredBlockchainEvent
}

/** Steps at the same instant keep the pipeline's order. */
const ORDER: readonly TraceStepName[] = ['accepted', 'sealed', 'uploaded', 'delivered', 'pinned', 'mined', 'received', 'blob_fetched', 'confirmed', 'rejected']

/**
 * The steps of a message's life on this member, oldest first, each from what is stored with its time: on the member
 * that sent it, accepted (the message's `created`), sealed (its batch's `created`), uploaded (a broadcast's payload,
 * with its CID, and each blob published), delivered (a private batch, per peer node: the deliveries table) and pinned
 * (when the chain took the pin transaction); on every member, mined (the BatchPin log, when read here); on the others,
 * received (the batch stored here) and each blob fetched; then confirmed or rejected. A step whose time this member
 * never stored (rows older than schema v10, say) is left out rather than guessed.
 */
export function timelineOf(deps: TimelineDeps, place: MessagePlace): TraceStep[] {
  const { message, batch, pinEvent } = place
  const steps: TraceStep[] = []
  const local = batch ? batch.local : true
  if (local) {
    steps.push({ at: message.header.created, step: 'accepted', detail: `accepted by this member (${message.header.type}${message.header.txtype === 'none' ? ', unpinned' : ''})` })
    if (batch) steps.push(...senderSteps(deps, message, batch))
  }
  if (pinEvent) {
    const e = pinEvent
    steps.push({
      at: e.received,
      step: 'mined',
      detail: `its batch's pin was mined in block ${e.blockNumber} (log ${e.logIndex}, transaction ${e.txHash}) and read here`,
      batch: e.batchId,
      tx: e.txId,
      chainTx: e.txHash,
      block: e.blockNumber,
      logIndex: e.logIndex,
    })
  }
  if (batch && !local) steps.push(...receiverSteps(deps, message, batch))
  if (message.confirmed && message.state === 'confirmed') steps.push({ at: message.confirmed, step: 'confirmed', detail: 'confirmed here', ...(batch ? { batch: batch.id } : {}) })
  if (message.confirmed && message.state === 'rejected') {
    const reason = message.rejectReason ?? '(no reason recorded)'
    steps.push({ at: message.confirmed, step: 'rejected', detail: `rejected here: ${reason}`, reason, ...(batch ? { batch: batch.id } : {}) })
  }
  return steps
    .map((s, i) => ({ s, i, key: timestampSortKey(s.at) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : ORDER.indexOf(a.s.step) - ORDER.indexOf(b.s.step) || a.i - b.i))
    .map((x) => x.s)
}

/** Sealed, uploaded (broadcast), delivered (private) and pinned, on the member that sent the batch. */
function senderSteps(deps: TimelineDeps, message: Message, batch: BatchRecord): TraceStep[] {
  const steps: TraceStep[] = []
  const count = (JSON.parse(batch.manifest) as { messages?: unknown[] }).messages?.length ?? 0
  // An unpinned private batch is delivered and never pinned.
  const pinned = message.header.txtype !== 'none'
  steps.push({ at: batch.created, step: 'sealed', detail: `sealed into ${batch.type} batch ${batch.id} (${count} message${count === 1 ? '' : 's'})`, batch: batch.id, ...(pinned ? { tx: batch.txId } : {}) })
  const noted = deps.progress(batch.id)
  if (batch.type === 'broadcast') {
    for (const d of deps.data.getMany(message.data)) {
      if (!d.blob?.public) continue
      const ref = deps.refs.settled({ hash: d.blob.hash, size: d.blob.size, public: d.blob.public })
      if (ref?.ok) steps.push({ at: ref.at, step: 'uploaded', detail: `blob ${d.blob.hash} published to shared storage: ${d.blob.public}`, blob: d.blob.hash, cid: d.blob.public })
    }
    const at = batch.uploaded ?? noted?.uploaded?.at
    const cid = batch.payloadRef || noted?.uploaded?.payloadRef
    if (at && cid) steps.push({ at, step: 'uploaded', detail: `batch uploaded to shared storage: ${cid}`, batch: batch.id, cid })
  } else {
    for (const d of deps.deliveries.ofBatch(batch.id)) steps.push(deliveryStep(deps, batch.id, d))
  }
  if (!pinned) return steps
  const sentAt = batch.pinSent ?? noted?.sent?.at
  const chainTx = batch.chainTx ?? noted?.sent?.chainTx
  if (sentAt) {
    steps.push({ at: sentAt, step: 'pinned', detail: `pin transaction sent to the chain${chainTx ? ` (${chainTx})` : ''}`, batch: batch.id, tx: batch.txId, ...(chainTx ? { chainTx } : {}) })
  } else if (batch.state === 'pinned') {
    // Pinned before the send time was recorded (schema v10): FireFly's transaction_submitted, written at the seal.
    const submitted = deps.events.list({ namespace: batch.namespace, type: 'transaction_submitted', reference: batch.txId, limit: 1, skip: 0 })[0]
    if (submitted) steps.push({ at: submitted.created, step: 'pinned', detail: `pin transaction submitted with its batch${chainTx ? ` (${chainTx})` : ''}`, batch: batch.id, tx: batch.txId, ...(chainTx ? { chainTx } : {}) })
  }
  return steps
}

/** One private delivery to a peer node: done, refused for good, or not yet (with its attempts, or held by a control). */
function deliveryStep(deps: TimelineDeps, batchId: BatchId, d: Delivery): TraceStep {
  const org = deps.orgOfNode(d.peer)
  const control = d.state === 'pending' ? deps.deliveryControl?.(batchId, d.peer) : undefined
  const common = { step: 'delivered' as const, batch: batchId, peer: d.peer, org, attempts: d.attempts }
  if (d.state === 'done') return { ...common, at: d.settled ?? d.created, state: 'done', detail: `delivered to ${d.peer} (${org})${d.settled ? '' : '; when is not recorded (shown at the time it was queued)'}` }
  if (d.state === 'failed') {
    const reason = d.reason ?? '(no reason recorded)'
    return { ...common, at: d.settled ?? d.created, state: 'failed', reason, detail: `refused for good by ${d.peer} (${org}): ${reason}` }
  }
  const tried = d.attempts > 0 ? `; ${d.attempts} attempt${d.attempts === 1 ? '' : 's'} so far${d.reason ? `, the last: ${d.reason}` : ''}${control ? '' : `; next attempt at ${formatTimestamp(d.nextAt)}`}` : ''
  const held = control === 'held' ? '; held by a test control' : control === 'dropped' ? '; dropped by a test control (never sent while the member runs)' : ''
  return { ...common, at: d.created, state: control ?? 'pending', ...(d.reason ? { reason: d.reason } : {}), detail: `queued for ${d.peer} (${org}), not delivered yet${held}${tried}` }
}

/** Received (the batch stored here) and each blob fetched, on a member the batch was sent to. */
function receiverSteps(deps: TimelineDeps, message: Message, batch: BatchRecord): TraceStep[] {
  const steps: TraceStep[] = []
  const from = batch.type === 'private' && batch.node ? { peer: batch.node, org: deps.orgOfNode(batch.node) } : undefined
  if (batch.received) {
    steps.push(
      from
        ? { at: batch.received, step: 'received', detail: `batch ${batch.id} received from ${from.peer} (${from.org}) and verified`, batch: batch.id, ...from }
        : { at: batch.received, step: 'received', detail: `batch ${batch.id} downloaded from shared storage${batch.payloadRef ? ` (${batch.payloadRef})` : ''} and verified`, batch: batch.id, ...(batch.payloadRef ? { cid: batch.payloadRef } : {}) },
    )
  }
  for (const d of deps.data.getMany(message.data)) {
    if (!d.blob) continue
    const blob = d.blob.hash
    if (batch.type === 'broadcast' && d.blob.public) {
      const cid = d.blob.public
      const ref = deps.refs.settled({ hash: blob, size: d.blob.size, public: cid })
      if (ref?.ok) steps.push({ at: ref.at, step: 'blob_fetched', detail: `blob ${blob} fetched from shared storage (${cid}) and verified`, blob, cid })
      else if (ref) steps.push({ at: ref.at, step: 'blob_fetched', detail: `blob ${blob} at ${cid} refused: ${ref.reason}`, blob, cid, reason: ref.reason })
    } else if (batch.type === 'private') {
      const at = deps.blobs.heldSince(blob)
      if (at) steps.push({ at, step: 'blob_fetched', detail: `blob ${blob} received${from ? ` from ${from.peer} (${from.org})` : ''} and verified`, blob, ...(from ?? {}) })
    }
  }
  return steps
}
