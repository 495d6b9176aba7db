import type { EventId, TxId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'
import type { Message } from './message.js'
import type { Datatype } from './datatype.js'
import type { Identity } from './identity.js'
import type { StoredBlockchainEvent } from './blockchain-event.js'
import type { BatchTxType } from './batch.js'

/** The event types a node writes to its log. */
export const EVENT_TYPES = [
  'message_confirmed',
  'message_rejected',
  'identity_confirmed',
  'datatype_confirmed',
  'transaction_submitted',
  'blockchain_event_received',
] as const
export type EventType = (typeof EVENT_TYPES)[number]

/** The topic FireFly gives a `blockchain_event_received` for a BatchPin log. */
export const BATCH_PIN_EVENT_TOPIC = 'ff_batch_pin'

export interface NodeEvent {
  id: EventId
  sequence: number
  type: EventType
  namespace: string
  /**
   * The referred object: the message id for message events, the identity id, the datatype id, the transaction id
   * (`transaction_submitted`), the stored blockchain event id (`blockchain_event_received`).
   */
  reference: string
  /**
   * Message events: the hash of the message the verdict was about. Ids are chosen by senders and two messages may share
   * one (schema v18); absent on events written before.
   */
  referenceHash?: string
  correlator?: string
  tx?: string
  topic?: string
  created: Timestamp
}

export type NewEvent = Omit<NodeEvent, 'id' | 'sequence' | 'created'>

/** A transaction as events refer to it: the pin of one batch (or an unpinned batch's local transaction). */
export interface EventTransaction {
  id: TxId
  namespace: string
  type: BatchTxType
  created: Timestamp
  /** Chain transaction hashes that carried it, once this node has read them. */
  blockchainIds: string[]
}

/**
 * The object an event refers to, read for delivery (FireFly's `event_enrich.go`): at most one is set, chosen by the
 * event's type. Missing when the object is gone or unknown (an event is never held back for it).
 */
export interface EventReferences {
  /** Message events; the message without its data values (data references only). */
  message?: Message
  datatype?: Datatype
  identity?: Identity
  transaction?: EventTransaction
  blockchainEvent?: StoredBlockchainEvent
}

/** An event with its referred object, as subscription filters see it and transports deliver it. */
export interface EnrichedEvent {
  event: NodeEvent
  refs: EventReferences
}
