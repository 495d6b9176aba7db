import type { Database, Tx } from '../database.js'
import { andWhere, filterSql } from '../filter-sql.js'
import { EVENT_FIELDS } from '../query-fields.js'
import { chunks } from '../in-list.js'
import { newId, type EventId } from '../../core/ids.js'
import type { Timestamp } from '../../core/time.js'
import { type EventType, type NewEvent, type NodeEvent, type EventQuery } from '../../model/index.js'

interface Row {
  seq: number
  id: string
  type: string
  namespace: string
  reference: string
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
    const id = newId<EventId>()
    const r = tx.run('INSERT INTO events (id, type, namespace, reference, correlator, tx, topic, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', [
      id,
      e.type,
      e.namespace,
      e.reference,
      e.correlator ?? null,
      e.tx ?? null,
      e.topic ?? null,
      created,
    ])
    return { ...e, id, sequence: r.lastInsertRowid, created }
  }

  /**
   * Appends events in the order given with one statement per few hundred: their sequences are consecutive, since one
   * statement's AUTOINCREMENT rowids are, and this is the only writer of the log.
   */
  insertMany(tx: Tx, list: readonly NewEvent[], created: Timestamp): NodeEvent[] {
    const out: NodeEvent[] = []
    for (const part of chunks(list, 200)) {
      const params: (string | null)[] = []
      const rows = part.map((e) => {
        const id = newId<EventId>()
        params.push(id, e.type, e.namespace, e.reference, e.correlator ?? null, e.tx ?? null, e.topic ?? null, created)
        return { ...e, id, created }
      })
      const r = tx.run(`INSERT INTO events (id, type, namespace, reference, correlator, tx, topic, created) VALUES ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`, params)
      if (r.changes !== rows.length) throw new Error(`inserted ${r.changes} of ${rows.length} events`)
      const first = r.lastInsertRowid - rows.length + 1
      rows.forEach((e, i) => out.push({ ...e, sequence: first + i }))
    }
    return out
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
    andWhere(conds, params, filterSql(q.filter, EVENT_FIELDS))
    const sql = `SELECT * FROM events WHERE ${conds.join(' AND ')} ORDER BY seq ${q.ascending ? 'ASC' : 'DESC'} LIMIT ? OFFSET ?`
    return this.db.all<Row>(sql, [...params, q.limit, q.skip]).map(fromRow)
  }
}

function fromRow(r: Row): NodeEvent {
  return {
    id: r.id as EventId,
    sequence: r.seq,
    type: r.type as EventType,
    namespace: r.namespace,
    reference: r.reference,
    ...(r.correlator ? { correlator: r.correlator } : {}),
    ...(r.tx ? { tx: r.tx } : {}),
    ...(r.topic ? { topic: r.topic } : {}),
    created: r.created as Timestamp,
  }
}
