import type { Hash } from '../core/ids.js'
import { now } from '../core/time.js'
import type { Database } from '../db/database.js'
import type { BlockchainEventsRepo } from '../db/repos/blockchain-events.js'
import type { EventsRepo } from '../db/repos/events.js'
import type { NodeStateRepo } from '../db/repos/node-state.js'
import type { PinsRepo } from '../db/repos/pins.js'
import { BATCH_PIN_ACTION, BATCH_PIN_EVENT_TOPIC, SYSTEM_NAMESPACE, type BatchPinEvent, type NewEvent, type NodeEvent, type PinnedBatch } from '../model/index.js'

/**
 * The chain follower's sink: in one transaction, the BatchPin logs of a block range, one pin per context, a
 * `blockchain_event_received` event per log stored for the first time, and the cursor. Once that is durable the
 * events are published, each pinned broadcast batch goes to the fetcher (which skips those already held), and the
 * aggregator is woken.
 *
 * The events are in the system namespace: a BatchPin log of network version 2 names no namespace, and the contract
 * serves them all, so a log belongs to the network as an identity claim does. Network actions are BatchPin logs too.
 */
export function pinIngest(deps: {
  db: Database
  state: NodeStateRepo
  blockchainEvents: BlockchainEventsRepo
  pins: PinsRepo
  events: EventsRepo
  /** Told of the events written, once they are durable. */
  published: (events: readonly NodeEvent[]) => void
  fetch: (b: PinnedBatch) => void
  wake: () => void
  /** Told, once durable, of each private pin event read (a batch it names stops counting against its org's quota). */
  privatePinned?: (batchId: string, batchHash: string, signer: string) => void
}) {
  return async (events: BatchPinEvent[], throughBlock: number): Promise<void> => {
    const received = now()
    const pinned: PinnedBatch[] = []
    const privatePins: BatchPinEvent[] = []
    const written = await deps.db.transaction((tx) => {
      const fresh: NewEvent[] = []
      for (const ev of events) {
        const eventId = deps.blockchainEvents.insert(tx, ev, received)
        // A log read again (a block range re-read after a restart) was announced the first time.
        if (eventId) fresh.push({ type: 'blockchain_event_received', namespace: SYSTEM_NAMESPACE, reference: eventId, tx: ev.txId, topic: BATCH_PIN_EVENT_TOPIC })
        // Network actions carry no contexts; only batch pins order messages.
        if (!eventId || ev.action !== BATCH_PIN_ACTION || ev.contexts.length === 0) continue
        deps.pins.insertMany(
          tx,
          ev.contexts.map((hash: Hash, index) => ({ batchId: ev.batchId, batchHash: ev.batchHash, index, hash, masked: ev.payloadRef === '', signer: ev.author, eventId })),
        )
        if (ev.payloadRef === '') privatePins.push(ev)
        else pinned.push({ batchId: ev.batchId, batchHash: ev.batchHash, txId: ev.txId, payloadRef: ev.payloadRef, signer: ev.author, eventId })
      }
      deps.state.setChainCursor(tx, throughBlock + 1)
      return fresh.length > 0 ? deps.events.insertMany(tx, fresh, received) : []
    })
    if (written.length > 0) deps.published(written)
    for (const ev of privatePins) deps.privatePinned?.(ev.batchId, ev.batchHash, ev.author)
    for (const p of pinned) deps.fetch(p)
    if (pinned.length > 0 || events.length > 0) deps.wake()
  }
}
