import { expect } from 'chai'
import { transactionStatus } from '../../../../node/operations/transaction-status.js'
import type { BatchId, OperationId, TxId } from '../../../../node/core/ids.js'
import type { Timestamp } from '../../../../node/core/time.js'
import type { BatchRecord, Operation, OperationStatus, StoredBlockchainEvent, Transaction, TransactionType } from '../../../../node/model/index.js'

const T = '2024-01-01T00:00:00Z' as Timestamp
const tx = (type: TransactionType): Transaction => ({ id: 'tx' as TxId, namespace: 'default', type, created: T, blockchainIds: [] })
const op = (status: OperationStatus): Operation => ({ id: `op-${status}` as OperationId, namespace: 'default', type: 'blockchain_pin_batch', status, plugin: 'ethereum', input: {}, created: T, updated: T })
const event = { id: 'ev' } as StoredBlockchainEvent
const batch = { id: 'b' as BatchId, type: 'broadcast' } as BatchRecord

describe("operations: a transaction's status, by FireFly's rules", () => {
  it('a pinned transaction succeeds once its operations did and its BatchPin log and batch are here', () => {
    const st = transactionStatus(tx('batch_pin'), { operations: [op('Succeeded')], events: [event], batch })
    expect(st.status).to.equal('Succeeded')
    expect(st.details.map((d) => d.kind)).to.deep.equal(['operation', 'blockchainEvent', 'batch'])
  })

  it('without its log or its batch it is Pending, each missing part a pending detail', () => {
    const st = transactionStatus(tx('batch_pin'), { operations: [op('Succeeded')], events: [] })
    expect(st.status).to.equal('Pending')
    expect(st.details.slice(1)).to.deep.equal([
      { kind: 'pending', of: 'BlockchainEvent' },
      { kind: 'pending', of: 'Batch' },
    ])
  })

  it('a failed operation makes it Failed, whatever comes after; a pending one Pending', () => {
    expect(transactionStatus(tx('batch_pin'), { operations: [op('Failed'), op('Pending')], events: [event], batch }).status).to.equal('Failed')
    expect(transactionStatus(tx('batch_pin'), { operations: [op('Pending'), op('Succeeded')], events: [event], batch }).status).to.equal('Pending')
  })

  it('an unpinned transaction, or a data publish, is its operations alone', () => {
    expect(transactionStatus(tx('unpinned'), { operations: [op('Succeeded')], events: [] })).to.deep.equal({ status: 'Succeeded', details: [{ kind: 'operation', operation: op('Succeeded') }] })
    expect(transactionStatus(tx('data_publish'), { operations: [op('Failed')], events: [] }).status).to.equal('Failed')
  })
})
