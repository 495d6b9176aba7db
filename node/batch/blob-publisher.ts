import type { Database } from '../db/database.js'
import type { DataRepo } from '../db/repos/data.js'
import type { BlobRefsRepo } from '../db/repos/blob-refs.js'
import { now } from '../core/time.js'
import type { BlobStore } from '../data/blob-store.js'
import type { SharedStorage } from '../storage/shared-storage.js'
import { type Data } from '../model/index.js'
import type { TxId } from '../core/ids.js'
import type { OperationRecorder } from '../operations/recorder.js'

/**
 * Publishes blobs to shared storage on the first broadcast that carries them, before the batch itself goes
 * out: the batch tells every member where to fetch each blob, so the reference must exist (and be recorded,
 * so a restart does not publish again) by then. Streamed from the blob store; memory stays flat.
 */
export class BlobPublisher {
  constructor(private readonly deps: { db: Database; data: DataRepo; refs: BlobRefsRepo; blobStore: BlobStore; storage: SharedStorage; operationRecorder?: OperationRecorder }) {}

  /**
   * Answers whether any data item got a reference (the caller then re-reads the data to carry the new references).
   * `owner` is the batch's transaction, which each upload is recorded under as an operation.
   */
  async publishAll(items: readonly Data[], owner?: { namespace: string; txId: TxId }): Promise<boolean> {
    const { db, data, refs, blobStore, storage, operationRecorder } = this.deps
    const published = new Map<string, string>()
    let referenced = false
    for (const d of items) {
      if (!d.blob || d.blob.public) continue
      // Published before (by another data item, or verified at another member's reference): no need to upload again.
      let ref = published.get(d.blob.hash) ?? refs.verifiedPublic(d.blob.hash, d.blob.size)
      const uploading = !ref
      if (!ref) {
        const held = await blobStore.read(d.blob.hash)
        if (!held) throw new Error(`blob ${d.blob.hash} of data ${d.id} is not held by this node, so it cannot be published`)
        try {
          // Named by its hash, never by the user's name: Kubo reads a `/` in a name as a directory to wrap it in.
          ref = await storage.upload(held.stream, d.blob.hash)
        } finally {
          held.stream.destroy()
        }
        published.set(d.blob.hash, ref)
      }
      const announced = { hash: d.blob.hash, size: d.blob.size, public: ref }
      // Put there by this node, or already verified: the reference is known good.
      await db.transaction((tx) => {
        const at = now()
        data.setBlobPublic(tx, d, announced.public)
        refs.settle(tx, announced, { ok: true }, at)
        if (owner && uploading) operationRecorder?.blobPublished(tx, owner, d.id, announced.public, at)
      })
      referenced = true
    }
    return referenced
  }
}
