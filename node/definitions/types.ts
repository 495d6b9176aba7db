import type { Tx } from '../db/database.js'
import { type Data, type Message, type NewEvent, type Wait } from '../model/index.js'

/**
 * What a definition (a system message such as an identity claim or a datatype) does when it is its turn in the
 * chain's order: apply itself inside the confirming transaction, or say why it must be rejected.
 */
export type DefinitionOutcome =
  | { kind: 'confirm'; events: NewEvent[]; afterCommit?: () => void }
  | { kind: 'reject'; reason: string }
  /** Not yet decidable (e.g. the parent identity is not confirmed yet); the message waits, for the reason given. */
  | { kind: 'wait'; wait: Wait }

export interface DefinitionHandler {
  tag: string
  /** `pinSeq`: the local sequence of the message's first pin, which orders it against every other pin. */
  handle(tx: Tx, message: Message, data: Data[], signer: string, pinSeq: number): DefinitionOutcome
}
