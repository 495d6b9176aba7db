import type { BatchId, DataId, Hash, MessageId, TxId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'

export * from './message-kinds.js'
import type { MessageState, MessageType } from './message-kinds.js'

/**
 * The most topics one message may name, on every member (each is a pin on chain): a sender refuses more, and a
 * receiver rejects a message with more.
 */
export const MAX_TOPICS_PER_MESSAGE = 10

/** `batch_pin`: ordered by a pin on chain; `none` (FireFly's `unpinned`): a private message delivered without one. */
export type TxType = 'batch_pin' | 'none'

/** The hashed header: exactly these fields, in FireFly's Go struct order (see core/hashes). */
export interface Header {
  id: MessageId
  cid?: MessageId
  type: MessageType
  txtype: TxType
  author: string
  key: string
  created: Timestamp
  namespace: string
  group?: Hash
  topics: string[]
  tag?: string
  datahash: Hash
}

/**
 * A message's reference to a data item, as batches carry it (id and hash: what `header.datahash` covers). A received
 * message's stored references also hold `digest`, naming the row its own batch carried (core/hashes.ts dataDigest);
 * one without names this member's own data item. Batches and the API show only id and hash.
 */
export interface DataRef {
  id: DataId
  hash: Hash
  digest?: Hash
}

export interface Message {
  header: Header
  hash: Hash
  batch?: BatchId
  txid?: TxId
  state: MessageState
  confirmed?: Timestamp
  rejectReason?: string
  data: DataRef[]
  pins?: string[]
  idempotencyKey?: string
}
