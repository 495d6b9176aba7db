import type { DatatypeId, Hash, MessageId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'

export const DATATYPE_VALIDATOR = 'json'

/** A datatype as every member stores it once its definition is confirmed: it never changes afterwards. */
export interface Datatype {
  /** Chosen by the defining member and carried in the definition, so every member stores the same id. */
  id: DatatypeId
  /** The definition message that created it. */
  message: MessageId
  validator: 'json'
  namespace: string
  name: string
  version: string
  /** sha256 of `value`. */
  hash: Hash
  /** Time of confirmation on this member. */
  created: Timestamp
  /** The JSON Schema, as the compacted text that was hashed. */
  value: string
  /**
   * Local only: the sequence of the definition's first pin. Pins are stored in chain order, so this compares
   * with other pins' sequences as their places on chain do.
   */
  orderedAt: number
}
