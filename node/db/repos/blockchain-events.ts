import type { Database, Tx } from '../database.js'
import { andWhere, filterSql } from '../filter-sql.js'
import { BLOCKCHAIN_EVENT_FIELDS } from '../query-fields.js'
import { IN_LIST, inList } from '../in-list.js'
import { newId, type Hash } from '../../core/ids.js'
import type { Timestamp } from '../../core/time.js'
import type { BatchPinEvent, BlockchainEventQuery, StoredBlockchainEvent } from '../../model/index.js'


interface Row {
  seq: number
  id: string
  protocol_id: string
  block_number: number
  tx_index: number
  log_index: number
  tx_hash: string
  author: string
  timestamp: number
  action: string
  tx_id: string
  batch_id: string
  batch_hash: string
  payload_ref: string
  contexts: string
  received: string
  [k: string]: string | number
}

/** The BatchPin logs this node has read from the chain, in the order it read them. */
export class BlockchainEventsRepo {
  constructor(private readonly db: Database) {}

  /**
   * Idempotent on the log's position, so re-reading a block range after a crash inserts nothing twice.
   * Answers the event's id, or undefined when it was already stored.
   */
  insert(tx: Tx, ev: BatchPinEvent, received: Timestamp): string | undefined {
    const id = newId()
    const r = tx.run(
      `INSERT INTO blockchain_events (id, protocol_id, block_number, tx_index, log_index, tx_hash, author, timestamp, action,
         tx_id, batch_id, batch_hash, payload_ref, contexts, received)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (protocol_id) DO NOTHING`,
      [
        id,
        ev.protocolId,
        ev.blockNumber,
        ev.txIndex,
        ev.logIndex,
        ev.txHash,
        ev.author,
        ev.timestamp,
        ev.action,
        ev.txId,
        ev.batchId,
        ev.batchHash,
        ev.payloadRef,
        JSON.stringify(ev.contexts),
        received,
      ],
    )
    return r.changes === 1 ? id : undefined
  }

  /** The stored events among `ids`, by id, with one query whatever the number of ids. */
  byIds(ids: readonly string[], tx?: Tx): Map<string, StoredBlockchainEvent> {
    const out = new Map<string, StoredBlockchainEvent>()
    if (ids.length === 0) return out
    for (const r of (tx ?? this.db).all<Row>(`SELECT * FROM blockchain_events WHERE id ${IN_LIST}`, [inList(ids)])) out.set(r.id, fromRow(r))
    return out
  }

  /** Newest first. */
  list(q: BlockchainEventQuery): StoredBlockchainEvent[] {
    const conds: string[] = []
    const params: (string | number)[] = []
    if (q.batchId) {
      conds.push('batch_id = ?')
      params.push(q.batchId)
    }
    andWhere(conds, params, filterSql(q.filter, BLOCKCHAIN_EVENT_FIELDS))
    const where = conds.length > 0 ? `WHERE ${conds.join(' AND ')}` : ''
    return this.db.all<Row>(`SELECT * FROM blockchain_events ${where} ORDER BY seq DESC LIMIT ? OFFSET ?`, [...params, q.limit, q.skip]).map(fromRow)
  }
}

function fromRow(r: Row): StoredBlockchainEvent {
  return {
    seq: r.seq,
    id: r.id,
    protocolId: r.protocol_id,
    blockNumber: r.block_number,
    txIndex: r.tx_index,
    logIndex: r.log_index,
    txHash: r.tx_hash,
    author: r.author as StoredBlockchainEvent['author'],
    timestamp: r.timestamp,
    action: r.action,
    txId: r.tx_id as StoredBlockchainEvent['txId'],
    batchId: r.batch_id as StoredBlockchainEvent['batchId'],
    batchHash: r.batch_hash as Hash,
    payloadRef: r.payload_ref,
    contexts: JSON.parse(r.contexts) as Hash[],
    received: r.received as Timestamp,
  }
}
