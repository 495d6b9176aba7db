import type { BatchId } from '../core/ids.js'
import type { DeliveriesRepo } from '../db/repos/deliveries.js'
import { explainWait, type ExplainDeps } from '../aggregator/explain.js'
import type { BatchProgress } from '../batch/progress.js'
import type { BatchRecord, Waiting } from '../model/index.js'
import type { MessagePlace } from './timeline.js'

export interface WaitingDeps extends ExplainDeps {
  deliveries: DeliveriesRepo
  progress: (batchId: BatchId) => BatchProgress | undefined
  deliveryControl?: (batchId: BatchId, peer: string) => 'held' | 'dropped' | undefined
  orgOfNode: (nodeDid: string) => string
}

/**
 * Why a message is neither confirmed nor rejected on this member yet. Until its pin is read here the aggregator cannot
 * look at it, so the answer is where the message is on its way to the chain: on the member that sent it, not sealed
 * yet, or sealed and being uploaded (or its deliveries queued), or its pin transaction sent and not mined (or mined
 * and not read yet); on another member, its batch is here but its pin is not read. Once its pin is read and its batch
 * is here, the answer is the aggregator's own (Aggregator.explain: its ordering checks, run again read-only, then the
 * reason its own checks gave at the last pass), worded by explainWait; no rule is restated here.
 */
export function waitingOf(deps: WaitingDeps, place: MessagePlace): Waiting | undefined {
  const { message, batch, pinEvent } = place
  if (message.state === 'confirmed' || message.state === 'rejected') return undefined
  if (!batch) return { reason: 'pin', sealed: false, sent: false, detail: 'accepted here and not sealed into a batch yet: its pin is sent once its batch is sealed and made available' }
  if (!pinEvent) return batch.local ? senderWaiting(deps, batch) : { reason: 'pin', detail: `its batch ${batch.id} is here, but its pin has not been read from the chain here yet` }
  const held = deps.explain(message, batch)
  if (held) return { ...explainWait(deps, held.wait, batch), ...(held.at ? { since: held.at } : {}) }
  return { reason: 'pin', detail: `its pin was read (block ${pinEvent.blockNumber}) and its batch is here; nothing holds it back, and the aggregator decides it at its next walk` }
}

/** The sender's side of a pin on its way: sealed, made available, its pin transaction sent, mined, read. */
function senderWaiting(deps: WaitingDeps, batch: BatchRecord): Waiting {
  const sealed = `its batch ${batch.id} is sealed`
  if (batch.state === 'pinned') {
    return { reason: 'pin', sealed: true, sent: true, ...(batch.chainTx ? { chainTx: batch.chainTx } : {}), detail: `${sealed} and its pin transaction${batch.chainTx ? ` ${batch.chainTx}` : ''} was mined, but this member has not read it from the chain yet` }
  }
  const noted = deps.progress(batch.id)
  const deliveries = batch.type === 'private' ? deps.deliveries.ofBatch(batch.id) : []
  const toPeers = deliveries.length > 0 ? ` (deliveries: ${deliveries.map((d) => `${d.peer} (${deps.orgOfNode(d.peer)}) ${d.state === 'pending' ? (deps.deliveryControl?.(batch.id, d.peer) ?? 'pending') : d.state}`).join(', ')})` : ''
  if (noted?.sent) {
    return { reason: 'pin', sealed: true, sent: true, chainTx: noted.sent.chainTx, detail: `${sealed}; its pin transaction ${noted.sent.chainTx} was sent at ${noted.sent.at} and is not mined yet${toPeers}` }
  }
  if (batch.type === 'broadcast') {
    if (noted?.uploaded) return { reason: 'pin', sealed: true, sent: false, cid: noted.uploaded.payloadRef, detail: `${sealed} and uploaded (${noted.uploaded.payloadRef}); its pin transaction is not sent yet (pins go in the order batches were sealed)` }
    return { reason: 'pin', sealed: true, sent: false, detail: `${sealed}; it is being uploaded to shared storage, then its pin transaction is sent` }
  }
  if (deliveries.length === 0) return { reason: 'delivery', sealed: true, sent: false, detail: `${sealed}; its deliveries to the group's other members are being queued, then its pin transaction is sent` }
  return { reason: 'pin', sealed: true, sent: false, detail: `${sealed} and its deliveries queued; its pin transaction is not sent yet (pins go in the order batches were sealed)${toPeers}` }
}
