import type { Database, Tx } from '../database.js'
import { andWhere, filterSql } from '../filter-sql.js'
import { OPERATION_FIELDS } from '../query-fields.js'
import type { OperationId, TxId } from '../../core/ids.js'
import type { Timestamp } from '../../core/time.js'
import type { CollectionQuery, Operation, OperationFields, OperationStatus, OperationType } from '../../model/index.js'

interface Row {
  id: string
  namespace: string
  tx_id: string | null
  type: string
  plugin: string
  status: string
  input: string
  output: string | null
  error: string | null
  created: string
  updated: string
  [k: string]: string | number | null
}

/** How a step's outcome is recorded: its status, and what it produced or why it failed. */
export interface OperationOutcome {
  status: OperationStatus
  output?: OperationFields
  error?: string
  /** Replaces the input, for a step whose input is complete only once it ran (a pin's payload reference). */
  input?: OperationFields
}

/**
 * The operations this member ran (schema v13), each under a `key` naming the step (see operationKey), so the same step
 * prepared again after a restart finds its row.
 */
export class OperationsRepo {
  constructor(private readonly db: Database) {}

  /** Records a step; one recorded under the same key already is kept as it is. */
  add(tx: Tx, key: string, op: Operation): void {
    tx.write(
      `INSERT INTO operations (id, key, namespace, tx_id, type, plugin, status, input, output, error, created, updated)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`,
      [op.id, key, op.namespace, op.tx ?? null, op.type, op.plugin, op.status, JSON.stringify(op.input), op.output ? JSON.stringify(op.output) : null, op.error ?? null, op.created, op.updated],
    )
  }

  /** Records the step's outcome (nothing happens for a key never added). */
  settle(tx: Tx, key: string, outcome: OperationOutcome, at: Timestamp): void {
    tx.write(
      `UPDATE operations SET status = ?, output = COALESCE(?, output), error = ?, input = COALESCE(?, input), updated = ? WHERE key = ?`,
      [outcome.status, outcome.output ? JSON.stringify(outcome.output) : null, outcome.error ?? null, outcome.input ? JSON.stringify(outcome.input) : null, at, key],
    )
  }

  get(id: string): Operation | undefined {
    const r = this.db.get<Row>('SELECT * FROM operations WHERE id = ?', [id])
    return r && fromRow(r)
  }

  byKey(key: string, tx?: Tx): Operation | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM operations WHERE key = ?', [key])
    return r && fromRow(r)
  }

  /** Newest first. */
  list(namespace: string, q: CollectionQuery): Operation[] {
    const conds = ['namespace = ?']
    const params: (string | number)[] = [namespace]
    andWhere(conds, params, filterSql(q.filter, OPERATION_FIELDS))
    return this.db.all<Row>(`SELECT * FROM operations WHERE ${conds.join(' AND ')} ORDER BY seq DESC LIMIT ? OFFSET ?`, [...params, q.limit, q.skip]).map(fromRow)
  }
}

/** The key of one step: its type and what it acts on (a batch, a batch and a peer, a transaction and a data item...). */
export function operationKey(type: OperationType, ...subjects: readonly string[]): string {
  return [type, ...subjects].join(':')
}

function fromRow(r: Row): Operation {
  return {
    id: r.id as OperationId,
    namespace: r.namespace,
    ...(r.tx_id ? { tx: r.tx_id as TxId } : {}),
    type: r.type as OperationType,
    status: r.status as OperationStatus,
    plugin: r.plugin,
    input: JSON.parse(r.input) as OperationFields,
    ...(r.output ? { output: JSON.parse(r.output) as OperationFields } : {}),
    ...(r.error ? { error: r.error } : {}),
    created: r.created as Timestamp,
    updated: r.updated as Timestamp,
  }
}
