import type { BatchRecord, Operation, OperationStatus, StoredBlockchainEvent, Transaction } from '../model/index.js'

/** One part of a transaction's status (FireFly's TransactionStatusDetails), with what it reports on. */
export type TransactionStatusDetail =
  | { kind: 'operation'; operation: Operation }
  | { kind: 'blockchainEvent'; event: StoredBlockchainEvent }
  | { kind: 'batch'; batch: BatchRecord }
  /** What a pinned transaction waits for and this member has not seen yet: the BatchPin log, or the batch. */
  | { kind: 'pending'; of: 'BlockchainEvent' | 'Batch' }

export interface TransactionStatus {
  status: OperationStatus
  details: TransactionStatusDetail[]
}

/**
 * FireFly's transaction status (orchestrator/txn_status.go): its operations, its blockchain events and, for a pinned
 * transaction, its batch, each a detail; Succeeded when every operation succeeded and a pinned transaction has both
 * its log and its batch here, Failed once an operation failed, Pending otherwise.
 */
export function transactionStatus(t: Transaction, parts: { operations: readonly Operation[]; events: readonly StoredBlockchainEvent[]; batch?: BatchRecord }): TransactionStatus {
  let status: OperationStatus = 'Succeeded'
  const update = (next: OperationStatus): void => {
    if (status !== 'Failed' && next !== 'Succeeded') status = next
  }
  const details: TransactionStatusDetail[] = []
  for (const operation of parts.operations) {
    details.push({ kind: 'operation', operation })
    update(operation.status)
  }
  for (const event of parts.events) details.push({ kind: 'blockchainEvent', event })
  if (t.type === 'batch_pin') {
    if (parts.events.length === 0) {
      details.push({ kind: 'pending', of: 'BlockchainEvent' })
      update('Pending')
    }
    if (parts.batch) details.push({ kind: 'batch', batch: parts.batch })
    else {
      details.push({ kind: 'pending', of: 'Batch' })
      update('Pending')
    }
  }
  return { status, details }
}
