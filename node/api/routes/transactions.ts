import type { ApiRouter } from '../router.js'
import type { NodeServices } from '../../services.js'
import { sendJson } from '../body.js'
import { MAX_LIMIT, parsePaging } from '../query.js'
import { andEquals, parseFilter } from '../filters.js'
import { presentBlockchainEvent, presentOperation, presentTransaction, presentTransactionStatus } from '../present.js'
import { ParleyError } from '../../core/errors.js'
import { parseUuid } from '../../core/ids.js'
import type { Transaction } from '../../model/index.js'
import { transactionStatus } from '../../operations/transaction-status.js'
import { OPERATION_FIELDS, TRANSACTION_FIELDS } from '../../services.js'
import { listOf, ref } from '../openapi/schemas.js'
import { UUID_PARAM } from '../openapi/params.js'

const TXN_ID = { txnid: UUID_PARAM('transaction id') }

/**
 * FireFly's transactions (a message's `txid` leads here: its batch's `batch_pin` transaction, with the chain
 * transactions that pinned it) and operations (the steps this member ran for them), read-only.
 */
export function transactionRoutes(r: ApiRouter<NodeServices>): void {
  r.get(
    '/transactions',
    {
      summary: "List transactions, newest first: the batches' and the data publishes'",
      tag: 'Transactions',
      operationId: 'getTxns',
      paging: true,
      filters: TRANSACTION_FIELDS,
      responses: { 200: { description: 'The transactions', schema: listOf('Transaction') } },
      errors: ['INVALID_FIELD', 'INVALID_FILTER'],
    },
    (ctx, s, ns, q) => {
      const paging = parsePaging(q)
      const filter = parseFilter(q)
      sendJson(ctx, 200, s.query.transactions.list(ns, { ...(filter ? { filter } : {}), ...paging }).map(presentTransaction))
    },
  )

  r.get(
    '/transactions/:txnid',
    {
      summary: 'A transaction by id, with the chain transactions that pinned it',
      tag: 'Transactions',
      operationId: 'getTxnByID',
      params: TXN_ID,
      responses: { 200: { description: 'The transaction', schema: ref('Transaction') } },
      errors: ['INVALID_ID', 'NOT_FOUND'],
    },
    (ctx, s, ns) => sendJson(ctx, 200, presentTransaction(transactionIn(s, ns, ctx.params.txnid))),
  )

  // Everything of one transaction, unpaged as in FireFly: a few steps per member, a log or two per pin.
  const all = { limit: MAX_LIMIT, skip: 0 }
  r.get(
    '/transactions/:txnid/operations',
    {
      summary: 'The operations this member ran for a transaction',
      tag: 'Transactions',
      operationId: 'getTxnOps',
      params: TXN_ID,
      responses: { 200: { description: 'The operations, newest first', schema: listOf('Operation') } },
      errors: ['INVALID_ID', 'NOT_FOUND'],
    },
    (ctx, s, ns) => {
      const t = transactionIn(s, ns, ctx.params.txnid)
      sendJson(ctx, 200, s.query.operations.list(ns, { filter: andEquals(undefined, 'tx', t.id), ...all }).map(presentOperation))
    },
  )
  r.get(
    '/transactions/:txnid/blockchainevents',
    {
      summary: 'The BatchPin logs of a transaction, as this member has read them',
      tag: 'Transactions',
      operationId: 'getTxnBlockchainEvents',
      params: TXN_ID,
      responses: { 200: { description: 'The blockchain events, newest first', schema: listOf('BlockchainEvent') } },
      errors: ['INVALID_ID', 'NOT_FOUND'],
    },
    (ctx, s, ns) => {
      const t = transactionIn(s, ns, ctx.params.txnid)
      sendJson(ctx, 200, s.query.blockchainEvents.list({ filter: andEquals(undefined, 'tx.id', t.id), ...all }).map((e) => presentBlockchainEvent(e, ns, s.config.chain.contract)))
    },
  )

  r.get(
    '/transactions/:txnid/status',
    {
      summary: "A transaction's status: its operations, its BatchPin logs and its batch, each Succeeded, Pending or Failed",
      tag: 'Transactions',
      operationId: 'getTxnStatus',
      params: TXN_ID,
      responses: { 200: { description: 'The status and its details', schema: ref('TransactionStatus') } },
      errors: ['INVALID_ID', 'NOT_FOUND'],
    },
    (ctx, s, ns) => {
      const t = transactionIn(s, ns, ctx.params.txnid)
      const operations = s.query.operations.list(ns, { filter: andEquals(undefined, 'tx', t.id), ...all })
      const events = s.query.blockchainEvents.list({ filter: andEquals(undefined, 'tx.id', t.id), ...all })
      const batch = s.query.batches.byTxId(t.id)
      sendJson(ctx, 200, presentTransactionStatus(transactionStatus(t, { operations, events, ...(batch ? { batch } : {}) }), ns, s.config.chain.contract))
    },
  )

  r.get(
    '/operations',
    {
      summary: 'List the operations this member ran (pins, uploads, deliveries), newest first',
      tag: 'Operations',
      operationId: 'getOps',
      paging: true,
      filters: OPERATION_FIELDS,
      responses: { 200: { description: 'The operations', schema: listOf('Operation') } },
      errors: ['INVALID_FIELD', 'INVALID_FILTER'],
    },
    (ctx, s, ns, q) => {
      const paging = parsePaging(q)
      const filter = parseFilter(q)
      sendJson(ctx, 200, s.query.operations.list(ns, { ...(filter ? { filter } : {}), ...paging }).map(presentOperation))
    },
  )

  r.get(
    '/operations/:opid',
    {
      summary: 'An operation by id',
      tag: 'Operations',
      operationId: 'getOpByID',
      params: { opid: UUID_PARAM('operation id') },
      responses: { 200: { description: 'The operation', schema: ref('Operation') } },
      errors: ['INVALID_ID', 'NOT_FOUND'],
    },
    (ctx, s, ns) => {
      const id = parseUuid(ctx.params.opid, 'operation id')
      const op = s.query.operations.get(id)
      if (!op || op.namespace !== ns) throw new ParleyError('NOT_FOUND', `operation ${id} not found in namespace ${ns}`)
      sendJson(ctx, 200, presentOperation(op))
    },
  )
}

function transactionIn(s: NodeServices, ns: string, raw: string | undefined): Transaction {
  const id = parseUuid(raw, 'transaction id')
  const t = s.query.transactions.get(id)
  if (!t || t.namespace !== ns) throw new ParleyError('NOT_FOUND', `transaction ${id} not found in namespace ${ns}`)
  return t
}
