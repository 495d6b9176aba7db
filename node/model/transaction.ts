import type { TxId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'
import type { BatchTxType } from './batch.js'

/** Transaction types this node makes: a batch's (`batch_pin`, `unpinned`), and a publish of one data item's value or blob. */
export type TransactionType = BatchTxType | 'data_publish'

/** FireFly's Transaction: the unit of work its operations and blockchain events belong to. */
export interface Transaction {
  id: TxId
  namespace: string
  type: TransactionType
  created: Timestamp
  idempotencyKey?: string
  /** Chain transaction hashes that carried it, as this node has read them (none for a transaction never pinned). */
  blockchainIds: string[]
}
