import type { Database, Tx } from '../database.js'
import { IN_LIST, inList } from '../in-list.js'
import { andWhere, filterSql } from '../filter-sql.js'
import { TRANSACTION_FIELDS, TRIMMED_TIME_KEY } from '../query-fields.js'
import type { TxId } from '../../core/ids.js'
import type { Timestamp } from '../../core/time.js'
import type { BatchTxType, CollectionQuery, EventTransaction, Transaction, TransactionType } from '../../model/index.js'

interface Row {
  tx_id: string
  namespace: string
  created: string
  tx_type: string | null
  chain: string
  [k: string]: string | number | null
}

interface ListRow {
  id: string
  namespace: string
  type: string
  created: string
  idempotency_key: string | null
  blockchain_ids: string
  [k: string]: string | number | null
}

/** The chain transactions of the BatchPin logs that pinned batch `b` with its own transaction id, oldest first. */
const CHAIN_IDS = (join: string) => `(SELECT ${join} FROM (
    SELECT e.tx_hash AS h FROM blockchain_events e WHERE e.batch_id = b.id AND e.tx_id = b.tx_id GROUP BY e.tx_hash ORDER BY MIN(e.seq)
  ) AS chain)`

/**
 * Every transaction this node knows, one row each (FireFly's Transaction): a batch's, from the first batch stored with
 * that id (a second batch naming it is a peer's forgery), and those recorded on their own. `blockchain_ids` is the
 * comma-joined chain transaction hashes, as filters compare it and the answer splits it.
 */
const ALL = `SELECT * FROM (
  SELECT b.tx_id AS id, b.namespace, COALESCE(json_extract(b.manifest, '$.tx.type'), 'batch_pin') AS type, b.created,
         NULL AS idempotency_key, COALESCE(${CHAIN_IDS("group_concat(h, ',')")}, '') AS blockchain_ids
    FROM batches b WHERE NOT EXISTS (SELECT 1 FROM batches o WHERE o.tx_id = b.tx_id AND o.seq < b.seq)
  UNION ALL
  SELECT id, namespace, type, created, idempotency_key, '' AS blockchain_ids FROM transactions
) AS t`

/**
 * Transactions. A batch's transaction has no row of its own: it is the one batch that carries its id (its type is in
 * the batch's manifest, as the batch's hash covers it), plus the chain transactions of the BatchPin logs that pinned
 * that batch, as this node has read them. Transactions that no batch carries (a data publish) are rows of their own.
 */
export class TransactionsRepo {
  constructor(private readonly db: Database) {}

  /** Records a transaction no batch carries. */
  insert(tx: Tx, t: Transaction): void {
    tx.run('INSERT INTO transactions (id, namespace, type, created, idempotency_key) VALUES (?, ?, ?, ?, ?)', [t.id, t.namespace, t.type, t.created, t.idempotencyKey ?? null])
  }

  /** The transaction recorded with this idempotency key in the namespace, if any. */
  byIdempotencyKey(namespace: string, key: string, tx?: Tx): Transaction | undefined {
    const r = (tx ?? this.db).get<ListRow>(`SELECT id, namespace, type, created, idempotency_key, '' AS blockchain_ids FROM transactions WHERE namespace = ? AND idempotency_key = ?`, [namespace, key])
    return r && fromListRow(r)
  }

  get(id: string): Transaction | undefined {
    const r = this.db.get<ListRow>(`${ALL} WHERE id = ?`, [id])
    return r && fromListRow(r)
  }

  /** Newest first, as FireFly lists them. */
  list(namespace: string, q: CollectionQuery): Transaction[] {
    const conds = ['namespace = ?']
    const params: (string | number)[] = [namespace]
    andWhere(conds, params, filterSql(q.filter, TRANSACTION_FIELDS))
    return this.db.all<ListRow>(`${ALL} WHERE ${conds.join(' AND ')} ORDER BY ${TRIMMED_TIME_KEY('created')} DESC, id LIMIT ? OFFSET ?`, [...params, q.limit, q.skip]).map(fromListRow)
  }

  /**
   * The transactions among `ids` that a batch held here carries, by id, with one query whatever the number of ids.
   * Where two batches name one transaction id (a peer's forgery), the one stored first answers.
   */
  byIds(ids: readonly string[], tx?: Tx): Map<string, EventTransaction> {
    const out = new Map<string, EventTransaction>()
    if (ids.length === 0) return out
    const rows = (tx ?? this.db).all<Row>(
      `SELECT b.tx_id, b.namespace, b.created, json_extract(b.manifest, '$.tx.type') AS tx_type, ${CHAIN_IDS('json_group_array(h)')} AS chain
       FROM batches b WHERE b.tx_id ${IN_LIST} ORDER BY b.seq`,
      [inList(ids)],
    )
    for (const r of rows) {
      if (out.has(r.tx_id)) continue
      out.set(r.tx_id, {
        id: r.tx_id as TxId,
        namespace: r.namespace,
        type: (r.tx_type ?? 'batch_pin') as BatchTxType,
        created: r.created as Timestamp,
        blockchainIds: JSON.parse(r.chain) as string[],
      })
    }
    return out
  }
}

function fromListRow(r: ListRow): Transaction {
  return {
    id: r.id as TxId,
    namespace: r.namespace,
    type: r.type as TransactionType,
    created: r.created as Timestamp,
    ...(r.idempotency_key ? { idempotencyKey: r.idempotency_key } : {}),
    blockchainIds: r.blockchain_ids === '' ? [] : r.blockchain_ids.split(','),
  }
}
