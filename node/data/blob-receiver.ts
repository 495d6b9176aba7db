import { ParleyError } from '../core/errors.js'
import type { Hash } from '../core/ids.js'
import { now } from '../core/time.js'
import type { Database } from '../db/database.js'
import type { BlobsRepo } from '../db/repos/blobs.js'
import type { BlobHandler, BlobRef, Peer } from '../exchange/index.js'
import type { BlobStore } from './blob-store.js'
import type { UnreferencedBlobs } from './unreferenced-blobs.js'

export interface BlobReceiverDeps {
  db: Database
  blobs: BlobsRepo
  blobStore: BlobStore
  /** The sending org's quota of blobs no message refers to: a blob over it is refused before its body is asked for. */
  quota: UnreferencedBlobs
  /** Whether `node` (a node DID) is a registered member node here: the exchange authenticated the certificate. */
  registered: (node: string) => boolean
  /** A blob was stored: messages waiting for it may now be decided (the aggregator's `blobSettled`). */
  stored: (hash: Hash) => void
  log: (line: string) => void
}

/**
 * The exchange's blob handler (FireFly's data exchange blob receipt): a private blob a peer streams here before the
 * batch that refers to it. The body goes straight into the blob store, hashed and counted as it is written, and must
 * be exactly the announced hash and size (`expect`): anything else is refused `BAD_PEER_DATA` and nothing of it is
 * kept. The blob is recorded as held in the same step, durably, before the exchange answers 204, and the aggregator
 * is woken (a private message waits while its blob is not held). At least once: a blob already held is read through
 * (the exchange checks it still) and resolves without being written again. A blob that would take its org past its
 * quota of blobs no message refers to is refused STORAGE_FULL before its body is read (the sender tries again later).
 */
export class BlobReceiver {
  constructor(private readonly deps: BlobReceiverDeps) {}

  readonly handle: BlobHandler = async (from: Peer, blob: BlobRef, content: AsyncIterable<Uint8Array>) => {
    const { db, blobs, blobStore } = this.deps
    if (!this.deps.registered(from.node)) throw new ParleyError('UNAVAILABLE', `node ${from.node} is not registered here yet`)
    if (blobs.has(blob.hash)) {
      // Already here (an acknowledgement lost in transit, a resend after a restart): the body still has to be read.
      for await (const _ of content) void _
      return
    }
    if (db.diskFull) throw new ParleyError('UNAVAILABLE', 'this node cannot take writes now (its disk is full); try again later')
    const share = this.deps.quota.reserve(from.org, blob.size)
    try {
      const stored = await blobStore.write(content, { expect: { hash: blob.hash, size: blob.size } })
      await db.transaction((tx) => {
        blobs.insert(tx, { hash: stored.hash, size: stored.size, created: now() })
        share.record(tx, stored.hash)
      })
      share.stored()
      this.deps.stored(stored.hash)
    } finally {
      share.release()
    }
  }
}
