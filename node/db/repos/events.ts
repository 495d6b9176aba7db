import type { Database, Tx } from '../database.js'
import { andWhere, filterSql } from '../filter-sql.js'
import { EVENT_FIELDS } from '../query-fields.js'
import { insertRows } from '../in-list.js'
import { extend } from '../../core/extend.js'
import { newId, type EventId } from '../../core/ids.js'
import type { Timestamp } from '../../core/time.js'
import { type EventType, type NewEvent, type NodeEvent, type EventQuery } from '../../model/index.js'

interface Row {
  seq: number
  id: string
  type: string
  namespace: string
  reference: string
  reference_hash: string | null
  correlator: string | null
  tx: string | null
  topic: string | null
  created: string
  [k: string]: string | number | null
}

/** The node's event log. `sequence` is insertion order: the order applications must process events in. */
export class EventsRepo {
  constructor(private readonly db: Database) {}

  insert(tx: Tx, e: NewEvent, created: Timestamp): NodeEvent {
    return this.insertMany(tx, [e], created)[0]!
  }

  /**
   * Appends events in the order given with few statements: their sequences are consecutive within each, since one
   * statement's AUTOINCREMENT rowids are, and this is the only writer of the log.
   */
  insertMany(tx: Tx, list: readonly NewEvent[], created: Timestamp): NodeEvent[] {
    // Made whole here, their sequence set once known: one object per event, its keys in the order they always had.
    const rows: NodeEvent[] = list.map((e) => extend(e, { id: newId<EventId>(), created, sequence: 0 }))
    const statements = insertRows(
      tx,
      'INSERT INTO events (id, type, namespace, reference, reference_hash, correlator, tx, topic, created)',
      '',
      rows.map((e) => [e.id, e.type, e.namespace, e.reference, e.referenceHash ?? null, e.correlator ?? null, e.tx ?? null, e.topic ?? null, created]),
      undefined,
      true,
    )
    let i = 0
    for (const { rows: n, result } of statements) {
      const first = result.lastInsertRowid - n + 1
      for (let k = 0; k < n; k++) rows[i++]!.sequence = first + k
    }
    return rows
  }

  /** The sequence of the newest event, 0 when the log is empty. */
  lastSequence(): number {
    return Number(this.db.get<{ s: number | null }>('SELECT MAX(seq) AS s FROM events')?.s ?? 0)
  }

  /** Events of a namespace after `afterSeq`, oldest first. */
  after(namespace: string, afterSeq: number, limit: number): NodeEvent[] {
    return this.db.all<Row>('SELECT * FROM events WHERE namespace = ? AND seq > ? ORDER BY seq LIMIT ?', [namespace, afterSeq, limit]).map(fromRow)
  }

  /** Newest first, as FireFly lists collections, unless `ascending`. */
  list(q: EventQuery): NodeEvent[] {
    const { sql, params } = eventListQuery(q)
    return this.db.all<Row>(sql, params).map(fromRow)
  }
}

/** The statement `list` runs: by `reference` through `events_reference` (schema v17), else along the sequence. */
export function eventListQuery(q: EventQuery): { sql: string; params: (string | number)[] } {
  const conds = ['namespace = ?']
  const params: (string | number)[] = [q.namespace]
  if (q.type) {
    conds.push('type = ?')
    params.push(q.type)
  }
  if (q.reference) {
    conds.push('reference = ?')
    params.push(q.reference)
  }
  if (q.referenceHash) {
    // Two messages may share an id: their events apart (those written before schema v18 name no hash).
    conds.push('(reference_hash = ? OR reference_hash IS NULL)')
    params.push(q.referenceHash)
  }
  andWhere(conds, params, filterSql(q.filter, EVENT_FIELDS))
  const sql = `SELECT * FROM events WHERE ${conds.join(' AND ')} ORDER BY seq ${q.ascending ? 'ASC' : 'DESC'} LIMIT ? OFFSET ?`
  return { sql, params: [...params, q.limit, q.skip] }
}

function fromRow(r: Row): NodeEvent {
  return {
    id: r.id as EventId,
    sequence: r.seq,
    type: r.type as EventType,
    namespace: r.namespace,
    reference: r.reference,
    ...(r.reference_hash ? { referenceHash: r.reference_hash } : {}),
    ...(r.correlator ? { correlator: r.correlator } : {}),
    ...(r.tx ? { tx: r.tx } : {}),
    ...(r.topic ? { topic: r.topic } : {}),
    created: r.created as Timestamp,
  }
}
