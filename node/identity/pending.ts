import { broadcastContext, identityTopic } from '../core/hashes.js'
import type { Tx } from '../db/database.js'
import type { PinsRepo } from '../db/repos/pins.js'

/**
 * Whether a claim for `did` was pinned before `beforeSeq` and is not applied yet. A message signed by a key
 * nobody has registered may wait only for that: its author's claim is ordered on the DID's own topic, so either it
 * precedes the message on chain (and the message waits for it) or it does not (and the message is refused).
 * Every member reaches the same verdict, and a stranger's key cannot hold a topic forever.
 */
export function claimPendingBefore(pins: PinsRepo, tx: Tx, did: string, beforeSeq: number): boolean {
  return pins.earlierUndispatched(tx, broadcastContext(identityTopic(did)), beforeSeq)
}
