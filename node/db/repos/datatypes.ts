import type { Database, Tx } from '../database.js'
import { andWhere, filterSql } from '../filter-sql.js'
import { DATATYPE_FIELDS } from '../query-fields.js'
import { IN_LIST, inList } from '../in-list.js'
import type { DatatypeId, Hash, MessageId } from '../../core/ids.js'
import type { Timestamp } from '../../core/time.js'
import type { CollectionQuery, Datatype } from '../../model/index.js'

interface Row {
  seq: number
  id: string
  message_id: string
  validator: string
  namespace: string
  name: string
  version: string
  hash: string
  value: string
  created: string
  ordered_at: number
  [k: string]: string | number | null
}


/** Confirmed datatypes. (namespace, name, version) is unique: the first definition ordered on chain holds it. */
export class DatatypesRepo {
  constructor(private readonly db: Database) {}

  insert(tx: Tx, d: Datatype): void {
    tx.run('INSERT INTO datatypes (id, message_id, validator, namespace, name, version, hash, value, created, ordered_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', [
      d.id,
      d.message,
      d.validator,
      d.namespace,
      d.name,
      d.version,
      d.hash,
      d.value,
      d.created,
      d.orderedAt,
    ])
  }

  /** Inside a transaction pass `tx`, so the read sees that transaction's own writes. */
  byNameVersion(namespace: string, name: string, version: string, tx?: Tx): Datatype | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM datatypes WHERE namespace = ? AND name = ? AND version = ?', [namespace, name, version])
    return r && fromRow(r)
  }

  byId(id: string, tx?: Tx): Datatype | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM datatypes WHERE id = ?', [id])
    return r && fromRow(r)
  }

  /** The datatypes among `ids` that are held here, by id, with one query whatever the number of ids. */
  byIds(ids: readonly string[], tx?: Tx): Map<string, Datatype> {
    const out = new Map<string, Datatype>()
    if (ids.length === 0) return out
    for (const r of (tx ?? this.db).all<Row>(`SELECT * FROM datatypes WHERE id ${IN_LIST}`, [inList(ids)])) out.set(r.id, fromRow(r))
    return out
  }

  /** Newest first. */
  list(namespace: string, q: CollectionQuery): Datatype[] {
    const conds = ['namespace = ?']
    const params: (string | number)[] = [namespace]
    andWhere(conds, params, filterSql(q.filter, DATATYPE_FIELDS))
    return this.db.all<Row>(`SELECT * FROM datatypes WHERE ${conds.join(' AND ')} ORDER BY seq DESC LIMIT ? OFFSET ?`, [...params, q.limit, q.skip]).map(fromRow)
  }
}

function fromRow(r: Row): Datatype {
  return {
    id: r.id as DatatypeId,
    message: r.message_id as MessageId,
    validator: 'json',
    namespace: r.namespace,
    name: r.name,
    version: r.version,
    hash: r.hash as Hash,
    created: r.created as Timestamp,
    value: r.value,
    orderedAt: Number(r.ordered_at),
  }
}
