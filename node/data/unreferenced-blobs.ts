import { ParleyError } from '../core/errors.js'
import type { Hash } from '../core/ids.js'
import type { Database, Tx } from '../db/database.js'
import type { BlobsRepo } from '../db/repos/blobs.js'
import type { ReceivedBlobsRepo } from '../db/repos/received-blobs.js'
import type { BlobStore } from './blob-store.js'
import { addCount } from '../core/counts.js'
import { readableDuration } from '../core/duration.js'

/** What a blob counts against its org's quota at the least, whatever its size: it costs a file and a row. */
export const MIN_BLOB_CHARGE_BYTES = 64 * 1024

/** Expired blobs deleted per transaction of a sweep. */
const SWEEP_CHUNK = 500

export interface UnreferencedBlobsDeps {
  db: Database
  blobs: BlobsRepo
  received: ReceivedBlobsRepo
  blobStore: BlobStore
  /** `quotas.unreferencedBlobBytesPerOrg`. */
  limitBytes: number
  /** `quotas.unreferencedBlobMs`. */
  keepMs: number
  log: (line: string) => void
  /** Epoch ms; a test's own clock. */
  now?: () => number
}

/** A blob's share of its org's quota, held while it is written. */
export interface BlobReservation {
  /** Inside the transaction that records the blob as held: records whose it is. */
  record(tx: Tx, hash: Hash): void
  /** After that transaction: the blob counts as stored. Without it, `release` gives the share back. */
  stored(): void
  /** Gives back what was not stored; idempotent, so it can sit in a `finally`. */
  release(): void
}

/**
 * The quota on blobs peers send that no stored data item refers to (a private blob comes before the batch that names
 * it, so some always wait a little): per sending org at most `limitBytes` (each blob counted at its size, at least
 * `MIN_BLOB_CHARGE_BYTES`), kept at most `keepMs`, then deleted by `sweep`. Blobs being received count from their
 * announcement, so parallel uploads cannot pass the quota together. A blob stops counting once a data item refers to
 * it: it is then a message's, and goes with it.
 */
export class UnreferencedBlobs {
  private readonly now: () => number
  /** Bytes charged per org for stored unreferenced blobs, as of the last count: only ever too high between counts. */
  private usage: Map<string, number> | undefined
  private readonly reserved = new Map<string, number>()

  constructor(private readonly deps: UnreferencedBlobsDeps) {
    this.now = deps.now ?? Date.now
  }

  /** Holds `size` bytes of `org`'s quota for a blob it announced; throws STORAGE_FULL (507) naming the quota when over. */
  reserve(org: string, size: number): BlobReservation {
    const charge = Math.max(size, MIN_BLOB_CHARGE_BYTES)
    const limit = this.deps.limitBytes
    let used = this.usedBy(org)
    // The count in memory only lags behind blobs that came to be referenced: count again before refusing.
    if (used + charge > limit) {
      this.usageMap().set(org, this.deps.received.usageOf(org))
      used = this.usedBy(org)
    }
    if (used + charge > limit) {
      throw new ParleyError(
        'STORAGE_FULL',
        `org ${org} already has ${used} bytes here in blobs that no message refers to (received or being received); this one of ${size} bytes would pass ${limit} (quotas.unreferencedBlobBytesPerOrg). Such blobs count until a stored message refers to them, and are deleted after ${readableDuration(this.deps.keepMs)} (quotas.unreferencedBlobMs)`,
      )
    }
    addCount(this.reserved, org, charge)
    let open = true
    const giveBack = (): void => {
      if (!open) return
      open = false
      addCount(this.reserved, org, -charge)
    }
    return {
      record: (tx, hash) => this.deps.received.insert(tx, { hash, org, bytes: charge, received: this.now() }),
      stored: () => {
        if (!open) return
        giveBack()
        const usage = this.usageMap()
        usage.set(org, (usage.get(org) ?? 0) + charge)
      },
      release: giveBack,
    }
  }

  /**
   * Deletes the blobs peers sent that no data item referred to within `keepMs`: their records now, their files once
   * no write can be about to record them (BlobStore.removeDiscarded). Forgets those a data item refers to, and counts
   * every org's usage again. Answers how many were deleted.
   */
  async sweep(): Promise<number> {
    const { db, received, blobs, blobStore } = this.deps
    const before = this.now() - this.deps.keepMs
    await db.transaction((tx) => received.forgetReferenced(tx))
    let deleted = 0
    let bytes = 0
    for (;;) {
      const gone = await db.transaction((tx) => {
        const expired = received.expired(before, SWEEP_CHUNK, tx)
        for (const b of expired) {
          received.delete(tx, b.hash)
          blobs.delete(tx, b.hash)
        }
        return expired
      })
      for (const b of gone) blobStore.discard(b.hash)
      deleted += gone.length
      bytes += gone.reduce((n, b) => n + b.bytes, 0)
      if (gone.length < SWEEP_CHUNK) break
    }
    await blobStore.removeDiscarded((hash) => blobs.has(hash))
    this.usage = received.usageByOrg()
    if (deleted > 0) this.deps.log(`blobs: deleted ${deleted} blob(s) peers sent (${bytes} bytes charged) that no message referred to within ${this.deps.keepMs} ms (quotas.unreferencedBlobMs)`)
    return deleted
  }

  /** Bytes `org` holds or is sending, as counted. */
  usedBy(org: string): number {
    return (this.usageMap().get(org) ?? 0) + (this.reserved.get(org) ?? 0)
  }

  private usageMap(): Map<string, number> {
    this.usage ??= this.deps.received.usageByOrg()
    return this.usage
  }
}
