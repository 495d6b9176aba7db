import type { Database, Tx } from '../database.js'
import { IN_LIST, inList } from '../in-list.js'
import type { TxId } from '../../core/ids.js'
import type { Timestamp } from '../../core/time.js'
import type { BatchTxType, EventTransaction } from '../../model/index.js'

interface Row {
  tx_id: string
  namespace: string
  created: string
  tx_type: string | null
  chain: string
  [k: string]: string | number | null
}

/**
 * Transactions as events refer to them. This node keeps no table of its own for them: a transaction is the one batch
 * that carries its id (its type is in the batch's manifest, as the batch's hash covers it), plus the chain
 * transactions of the BatchPin logs that pinned that batch, as this node has read them.
 */
export class TransactionsRepo {
  constructor(private readonly db: Database) {}

  /**
   * The transactions among `ids` that a batch held here carries, by id, with one query whatever the number of ids.
   * Where two batches name one transaction id (a peer's forgery), the one stored first answers.
   */
  byIds(ids: readonly string[], tx?: Tx): Map<string, EventTransaction> {
    const out = new Map<string, EventTransaction>()
    if (ids.length === 0) return out
    const rows = (tx ?? this.db).all<Row>(
      `SELECT b.tx_id, b.namespace, b.created, json_extract(b.manifest, '$.tx.type') AS tx_type,
         (SELECT json_group_array(h) FROM (
            SELECT e.tx_hash AS h FROM blockchain_events e WHERE e.batch_id = b.id AND e.tx_id = b.tx_id GROUP BY e.tx_hash ORDER BY MIN(e.seq)
         )) AS chain
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
