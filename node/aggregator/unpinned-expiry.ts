import type { Hash } from '../core/ids.js'
import type { DataRef } from '../model/index.js'
import type { Database } from '../db/database.js'
import type { BlobsRepo } from '../db/repos/blobs.js'
import type { DataRepo } from '../db/repos/data.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import { refKey } from '../db/repos/ref-key.js'
import type { PinsRepo } from '../db/repos/pins.js'
import type { ReceivedBlobsRepo } from '../db/repos/received-blobs.js'
import type { DeliveredBatch, UnpinnedBatchesRepo } from '../db/repos/unpinned-batches.js'
import type { BlobStore } from '../data/blob-store.js'
import type { RecentBatches } from './recent-batches.js'

/** Batches looked at per read of a sweep. */
const PAGE = 200

export interface UnpinnedExpiryDeps {
  db: Database
  repo: UnpinnedBatchesRepo
  pins: PinsRepo
  messages: MessagesRepo
  data: DataRepo
  blobs: BlobsRepo
  received: ReceivedBlobsRepo
  blobStore: BlobStore
  recent?: RecentBatches
  /** `quotas.unpinnedBatchMs`. */
  keepMs: number
  /**
   * Whether this node has read the chain as far as it goes: a pin mined while it was down, or not read yet, must not
   * be mistaken for one that never came, so nothing expires until then.
   */
  caughtUp: () => boolean
  log: (line: string) => void
  /**
   * Told of each batch the sweep has passed (deleted it, or kept it pinned or decided): it no longer counts against its
   * org's quota of batches no pin names (unpinned-quota.ts), which counts only batches past the sweep's cursor.
   */
  passed?: (batchId: string, batchHash: string) => void
  /** Epoch ms; a test's own clock. */
  now?: () => number
}

/**
 * Deletes the private batches a peer delivered that no pin named within `keepMs` of their arrival (a member can send
 * batches it never pins, and each would be kept for ever): the batch, its pending messages, their data items that no
 * other message carries, and those items' blobs that nothing else refers to. A pending message another batch of its
 * author carries too stays, as that batch carried it (carried-messages.ts). A pin arriving later for such a batch
 * finds it missing, as for a batch never delivered: its messages wait for it. A batch with a private pin of its key,
 * or with a message already decided (an unpinned batch's are, on arrival), is kept. Batches are looked at once, in
 * the order they came, from a cursor kept in the database.
 */
export class UnpinnedExpiry {
  private readonly now: () => number

  constructor(private readonly deps: UnpinnedExpiryDeps) {
    this.now = deps.now ?? Date.now
  }

  /** One pass over the batches old enough; answers how many were deleted. */
  async sweep(): Promise<number> {
    const { repo, keepMs } = this.deps
    if (!this.deps.caughtUp()) return 0
    const before = this.now() - keepMs
    let deleted = 0
    for (;;) {
      const page = repo.deliveredAfter(repo.cursor(), PAGE)
      const due = page.filter((b) => b.received === undefined || Date.parse(b.received) < before)
      for (const b of due) if (await this.expire(b)) deleted++
      // Batches came in this order: the first one not old enough ends the pass.
      if (due.length < page.length || page.length < PAGE) break
    }
    if (deleted > 0) this.deps.log(`private batches: deleted ${deleted} batch(es) delivered here that no pin named within ${keepMs} ms, with their pending messages and data (quotas.unpinnedBatchMs)`)
    return deleted
  }

  /** Deletes the batch unless it was pinned or has a decided message; moves the cursor past it either way. */
  private async expire(b: DeliveredBatch): Promise<boolean> {
    const { db, repo, pins, messages, data, blobs, received } = this.deps
    const freed: Hash[] = []
    const gone = await db.transaction((tx) => {
      repo.setCursor(tx, b.seq)
      // Passed, kept or deleted, it stops counting; told before the commit, so that a copy delivered again once the
      // deletion is durable is stored and counted anew.
      this.deps.passed?.(b.id, b.hash)
      // Stored before arrival times were recorded: not known to be old, kept.
      // Only its own key's private (masked) pins make it pinned: a squatter pinning its id, or its author pinning it as
      // a broadcast (which decides none of its messages), must not keep it for ever.
      if (b.received === undefined || pins.pinnedPrivately(b.id, b.hash, b.key, tx) || repo.hasDecided(tx, b)) return false
      const { pending, shared } = repo.pendingOf(tx, b)
      // What it carried with messages held from other batches: data rows only it may name.
      const recorded = messages.carried.ofBatch(b.id, b.hash, tx)
      const orphans: DataRef[] = [...recorded.values()].flatMap((c) => c.carried.data)
      const others = messages.carried.others(tx, pending, b.id, b.hash)
      const deleted = pending.filter((m) => {
        const other = others.get(refKey(m))
        if (other === undefined) return true
        // Its row now holds what that batch carried, which no longer needs its own record.
        messages.takeCarried(tx, m, other.carried, other.batchId)
        messages.carried.deleteOfBatch(tx, other.batchId, other.batchHash, m.id)
        orphans.push(...m.data)
        return false
      })
      // A message the other batch under its id lists too stays; its row, holding what this batch carried, takes what
      // that one did when it carried otherwise.
      for (const m of shared) {
        const twin = messages.carried.ofBatch(b.id, m.twin, tx).get(m.id)
        if (twin === undefined || twin.hash !== m.hash) continue
        messages.takeCarried(tx, m, twin.carried, b.id)
        messages.carried.deleteOfBatch(tx, b.id, m.twin, m.id)
        orphans.push(...m.data)
      }
      repo.deleteBatch(tx, b, deleted)
      messages.carried.deleteOfBatch(tx, b.id, b.hash)
      // Only received rows are this batch's to delete: a reference without a digest names this member's own item.
      for (const { data: d, blobStillUsed } of data.deleteUnnamed(tx, [...deleted.flatMap((m) => m.data), ...orphans])) {
        if (d.blob && !blobStillUsed && blobs.has(d.blob.hash, tx)) {
          blobs.delete(tx, d.blob.hash)
          received.delete(tx, d.blob.hash)
          freed.push(d.blob.hash)
        }
      }
      return true
    })
    if (!gone) return false
    this.deps.recent?.clear()
    for (const hash of freed) this.deps.blobStore.discard(hash)
    if (freed.length > 0) await this.deps.blobStore.removeDiscarded((hash) => blobs.has(hash))
    return true
  }
}
