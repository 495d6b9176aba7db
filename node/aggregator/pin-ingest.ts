import type { Hash } from '../core/ids.js'
import { now } from '../core/time.js'
import type { Database } from '../db/database.js'
import type { BlockchainEventsRepo } from '../db/repos/blockchain-events.js'
import type { NodeStateRepo } from '../db/repos/node-state.js'
import type { PinsRepo } from '../db/repos/pins.js'
import { type BatchPinEvent } from '../model/index.js'
import { BATCH_PIN_ACTION, type PinnedBatch } from '../model/index.js'

/**
 * The chain follower's sink: in one transaction, the BatchPin logs of a block range, one pin per context, and the
 * cursor. Then each pinned broadcast batch goes to the fetcher (which skips those already held), and the aggregator
 * is woken.
 */
export function pinIngest(deps: {
  db: Database
  state: NodeStateRepo
  blockchainEvents: BlockchainEventsRepo
  pins: PinsRepo
  fetch: (b: PinnedBatch) => void
  wake: () => void
}) {
  return async (events: BatchPinEvent[], throughBlock: number): Promise<void> => {
    const received = now()
    const pinned: PinnedBatch[] = []
    await deps.db.transaction((tx) => {
      for (const ev of events) {
        const eventId = deps.blockchainEvents.insert(tx, ev, received)
        // Network actions carry no contexts; only batch pins order messages.
        if (!eventId || ev.action !== BATCH_PIN_ACTION || ev.contexts.length === 0) continue
        deps.pins.insertMany(
          tx,
          ev.contexts.map((hash: Hash, index) => ({ batchId: ev.batchId, batchHash: ev.batchHash, index, hash, masked: ev.payloadRef === '', signer: ev.author, eventId })),
        )
        if (ev.payloadRef !== '') pinned.push({ batchId: ev.batchId, batchHash: ev.batchHash, txId: ev.txId, payloadRef: ev.payloadRef, signer: ev.author })
      }
      deps.state.setChainCursor(tx, throughBlock + 1)
    })
    for (const p of pinned) deps.fetch(p)
    if (pinned.length > 0 || events.length > 0) deps.wake()
  }
}
