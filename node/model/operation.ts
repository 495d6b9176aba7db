import type { OperationId, TxId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'

/**
 * The steps this member hands to a plugin, with FireFly's operation type names: pinning a batch, uploading a batch, a
 * blob or a data value to shared storage, sending a batch or a blob to another member's node over the exchange.
 */
export const OPERATION_TYPES = [
  'blockchain_pin_batch',
  'sharedstorage_upload_batch',
  'sharedstorage_upload_blob',
  'sharedstorage_upload_value',
  'dataexchange_send_batch',
  'dataexchange_send_blob',
] as const
export type OperationType = (typeof OPERATION_TYPES)[number]

/** FireFly's OpStatus: `Pending` once handed to the plugin, then `Succeeded` or `Failed` (for good). */
export type OperationStatus = 'Pending' | 'Succeeded' | 'Failed'

/** The plugin each operation type runs on, by the names the node's status shows them under. */
export const OPERATION_PLUGIN: Readonly<Record<OperationType, string>> = {
  blockchain_pin_batch: 'ethereum',
  sharedstorage_upload_batch: 'ipfs',
  sharedstorage_upload_blob: 'ipfs',
  sharedstorage_upload_value: 'ipfs',
  dataexchange_send_batch: 'p2p',
  dataexchange_send_blob: 'p2p',
}

/** A JSON object of plain values, as an operation's input and output are. */
export type OperationFields = Readonly<Record<string, string | readonly string[]>>

/** FireFly's Operation: one step of a transaction submitted by this member. */
export interface Operation {
  id: OperationId
  namespace: string
  tx?: TxId
  type: OperationType
  status: OperationStatus
  plugin: string
  input: OperationFields
  output?: OperationFields
  error?: string
  created: Timestamp
  updated: Timestamp
}
