import type { Database, Tx } from '../database.js'
import { andWhere, filterSql } from '../filter-sql.js'
import { EVENT_FIELDS } from '../query-fields.js'
import { writeRows } from '../in-list.js'
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
  /** The next event's sequence (insertMany): read from the log at the first event written, then counted. */
  private next: number | undefined

  constructor(private readonly db: Database) {}

  insert(tx: Tx, e: NewEvent, created: Timestamp): NodeEvent {
    return this.insertMany(tx, [e], created)[0]!
  }

  /**
   * Appends events in the order given, their sequences numbered here: the member is the only writer of its log, and
   * its transactions commit in the order they run (one connection, one turn after another), so numbering them as they
   * are written is the log's insertion order. Given rather than read back, the rows are a write nobody waits for
   * (Tx.write): on PostgreSQL they go with the transaction's next round trip or its COMMIT, where reading the generated
   * sequences back made the pass that confirms a batch wait for everything queued before it. A transaction that rolls
   * back leaves its numbers unused (a gap, as PostgreSQL's own sequences leave); a number is never given twice. So a
   * database has one EventsRepo (openRepositories, once per open database), and nothing else writes its log.
   */
  insertMany(tx: Tx, list: readonly NewEvent[], created: Timestamp): NodeEvent[] {
    let next = this.next ?? Number(tx.get<{ s: number | null }>('SELECT MAX(seq) AS s FROM events')?.s ?? 0) + 1
    // Made whole here: one object per event, its keys in the order they always had.
    const rows: NodeEvent[] = list.map((e) => extend(e, { id: newId<EventId>(), created, sequence: next++ }))
    this.next = next
    writeRows(
      tx,
      'INSERT INTO events (seq, id, type, namespace, reference, reference_hash, correlator, tx, topic, created)',
      '',
      rows.map((e) => [e.sequence, e.id, e.type, e.namespace, e.reference, e.referenceHash ?? null, e.correlator ?? null, e.tx ?? null, e.topic ?? null, created]),
    )
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
