import { broadcastContext } from '../core/hashes.js'
import type { DataRepo } from '../db/repos/data.js'
import type { SharedStorage } from '../storage/shared-storage.js'
import type { BlobPublisher } from './blob-publisher.js'
import type { Dispatcher, SealedBatch } from './dispatcher.js'
import { serializeBatch } from './payload.js'

/**
 * Broadcast batches go to shared storage: first the blobs they carry that are not published yet (the payload
 * announces where each is), then the payload itself. Both are content-addressed, so uploading again after a
 * restart gives the same references; nothing about the upload needs recording before the pin.
 */
export class BroadcastDispatcher implements Dispatcher {
  readonly type = 'broadcast' as const

  constructor(private readonly deps: { storage: SharedStorage; data: DataRepo; blobs: BlobPublisher }) {}

  async prepare(batch: SealedBatch, signal: AbortSignal): Promise<string> {
    signal.throwIfAborted()
    if (await this.deps.blobs.publishAll(batch.payload.data, { namespace: batch.record.namespace, txId: batch.record.txId })) {
      // The publisher recorded the new references; the payload carries them (the data hashes do not cover them).
      batch.payload = { ...batch.payload, data: this.deps.data.getMany(batch.payload.data) }
    }
    signal.throwIfAborted()
    return this.deps.storage.upload(Buffer.from(serializeBatch(batch.payload), 'utf8'), 'batch.json')
  }

  contexts(batch: SealedBatch) {
    return batch.payload.messages.flatMap((m) => m.header.topics.map((t) => broadcastContext(t)))
  }
}
