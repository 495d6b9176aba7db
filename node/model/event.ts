import type { EventId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'

/** The event types a node writes to its log. */
export type EventType = 'message_confirmed' | 'message_rejected' | 'identity_confirmed' | 'datatype_confirmed' | 'transaction_submitted'

export interface NodeEvent {
  id: EventId
  sequence: number
  type: EventType
  namespace: string
  /** The referred object: the message id for message events, the identity id, the datatype id, the tx id. */
  reference: string
  correlator?: string
  tx?: string
  topic?: string
  created: Timestamp
}

export type NewEvent = Omit<NodeEvent, 'id' | 'sequence' | 'created'>
