import type { Hash } from '../core/ids.js'
import type { DatatypeRef } from './data.js'

/**
 * Why a message cannot be decided yet, as data (a tagged outcome, as FireFly's definition handlers answer): what the aggregator's checks, the masked
 * pin checks and the definition handlers answer when they neither confirm nor reject. The aggregator keeps the last
 * one for each message it could not decide, and a message trace shows it (node/aggregator/explain.ts words it).
 * `detail`, where given, is the check's own words.
 */
export type Wait =
  /**
   * A private message's pin for `topic` is not on chain here (its batch arrived first), or (`detail`) what is on chain
   * at its place is no private pin.
   */
  | { reason: 'pin'; topic: string; detail?: string }
  /** Part of its batch is not here (some of its data). */
  | { reason: 'batch'; detail: string }
  /** A blob of its data: not held here yet, or (with `cid`) the reference its batch announced is not checked yet. */
  | { reason: 'blob'; blob: Hash; cid?: string }
  /** Its data's datatype: a definition ordered before it is not applied yet, or its check runs off the main thread. */
  | { reason: 'datatype'; datatype?: DatatypeRef; detail: string }
  /** An identity it needs: the author's claim (or a node claim's parent org) is not applied yet. */
  | { reason: 'identity'; author: string; detail?: string }
  /** Broadcast order: an earlier pin of the context of `topic` still waits; `blocker` is the first such pin's sequence. */
  | { reason: 'blocked'; by: 'topic'; topic: string; context: Hash; blocker: number }
  /** Private order: `author`'s message with `nonce` on `topic` in `group` (the next one expected here) is not settled. */
  | { reason: 'blocked'; by: 'nonce'; topic: string; group: Hash; author: string; nonce: number }
  /** Private: its group is not known here yet (the group's groupinit is not confirmed). */
  | { reason: 'blocked'; by: 'group'; group: Hash }
