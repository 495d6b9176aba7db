import type { BatchId } from '../core/ids.js'
import { now, type Timestamp } from '../core/time.js'

/** What the sender knows of one of its pinned batches on its way, beyond what is stored before the pin is mined. */
export interface BatchProgress {
  /** When the batch was made available (a broadcast's payload uploaded, at `payloadRef`; a private one's deliveries queued). */
  uploaded?: { at: Timestamp; payloadRef: string }
  /** When the chain took its pin transaction (the last one sent, if a send was retried), and that transaction's hash. */
  sent?: { at: Timestamp; chainTx: string }
}

/**
 * The steps of this member's pinned batches between sealing and the recording of their mined pin, in memory: what a
 * trace says of a batch whose pin is on its way (uploaded yet? pin transaction sent?). Once the pin is mined the
 * times are stored with it (BatchesRepo.setPinned) and the entry goes; a dispatch that ends otherwise (the node
 * stopping) drops its entry too, and the batch is dispatched again, with a new entry, at the next start.
 */
export class DispatchProgress {
  private readonly batches = new Map<BatchId, BatchProgress>()

  uploaded(id: BatchId, payloadRef: string): void {
    this.entry(id).uploaded = { at: now(), payloadRef }
  }

  sent(id: BatchId, chainTx: string): void {
    this.entry(id).sent = { at: now(), chainTx }
  }

  of(id: string): BatchProgress | undefined {
    return this.batches.get(id as BatchId)
  }

  forget(id: BatchId): void {
    this.batches.delete(id)
  }

  private entry(id: BatchId): BatchProgress {
    let e = this.batches.get(id)
    if (!e) this.batches.set(id, (e = {}))
    return e
  }
}
