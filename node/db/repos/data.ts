import type { Database, SqlValue, Tx } from '../database.js'
import { alsoIn, IN_LIST, inList, insertedCount, insertRows, textBytes, TEXT_FROM_BYTES, writeRows } from '../in-list.js'
import { andWhere, filterSql } from '../filter-sql.js'
import { DATA_FIELDS } from '../query-fields.js'
import { dataDigest } from '../../core/hashes.js'
import type { DataId, Hash } from '../../core/ids.js'
import { refKey } from './ref-key.js'
import type { Timestamp } from '../../core/time.js'
import { carriedFields, type Data, type DataRef, type AnnouncedBlob, type CollectionQuery } from '../../model/index.js'

interface Row {
  seq: number
  id: string
  namespace: string
  validator: string
  datatype_name: string | null
  datatype_version: string | null
  hash: string
  value: string | null
  created: string
  blob_hash: string | null
  blob_size: number | null
  blob_name: string | null
  blob_public: string | null
  public: string | null
  local: number
  digest: string | null
  [k: string]: string | number | null
}

/** The value goes in as its UTF-8 bytes (see TEXT_FROM_BYTES): values can be megabytes. */
const DATA_PLACEHOLDERS = ['?', '?', '?', '?', '?', '?', TEXT_FROM_BYTES, '?', '?', '?', '?', '?', '?', '?']

const DATA_INSERT = 'INSERT INTO data (id, namespace, validator, datatype_name, datatype_version, hash, value, created, blob_hash, blob_size, blob_name, blob_public, local, digest)'
/**
 * Either of the two keys (schema v19): this member's own item, one per id (`data_local`); a received one, one per
 * (id, hash, digest) (the table's unique key; own rows have no digest, and NULLs never collide).
 */
const DATA_CONFLICT = 'ON CONFLICT DO NOTHING'

/**
 * Up to this many digests, deleteUnnamed narrows the rows it reads by `instr` on each (a test per digest per row);
 * past it, reading every row's list once against a bound list costs less.
 */
const INSTR_DIGESTS = 4

/**
 * `local`: uploaded or sent here, not received. A received item is stored with the digest of what its batch carried:
 * its own `digest` when the caller computed it already (recent-batches.ts receivedRows), which is that digest.
 */
function dataRow(d: Data, local: boolean): SqlValue[] {
  const c = carriedFields(d)
  return [
    d.id,
    c.namespace,
    c.validator,
    c.datatypeName,
    c.datatypeVersion,
    d.hash,
    textBytes(d.value),
    c.created,
    c.blobHash,
    c.blobSize,
    c.blobName,
    c.blobPublic,
    local ? 1 : 0,
    local ? null : (d.digest ?? dataDigest(c)),
  ]
}

/**
 * A data item as a batch carried it, in `namespace` (a batch's item that names none is in the batch's), with the
 * digest (core/hashes.ts dataDigest) that names its received row. Copied field by field: a spread of the item that
 * adds a key it lacks costs V8 more than the digest's sha256, once per data item received.
 */
export function receivedItem(d: Data, namespace: string): Data {
  const s: Data = { id: d.id, validator: d.validator, namespace, hash: d.hash, created: d.created, value: d.value }
  if (d.datatype !== undefined) s.datatype = d.datatype
  if (d.public !== undefined) s.public = d.public
  if (d.blob !== undefined) s.blob = d.blob
  s.digest = dataDigest(carriedFields(s))
  return s
}

/** This member's own copy of a data item (an own row has no digest). */
export function asOwn(d: Data): Data {
  const { digest: _digest, ...own } = d
  return own
}

/**
 * Data items: small JSON values (kept as the exact text that was hashed) and references to blobs. A peer may send a
 * data item under an id held here with other content, or with the same value and other carried fields (a datatype,
 * say), which its hash does not cover: a received item is one row per (id, hash, digest), the digest covering what its
 * batch carried with it, and a received message's references name their rows by all three. `local`: this member's own
 * (uploaded here, or sent with a message of its own), one row per id, without a digest; its messages name it by id
 * and hash, and a peer's copy is never taken for it.
 */
export class DataRepo {
  constructor(private readonly db: Database) {}

  /** A data item arriving twice with the same hash (in two batches, or ours coming back) is stored once. */
  insert(tx: Tx, d: Data, local: boolean): void {
    this.insertMany(tx, [d], local)
  }

  /**
   * Answers how many of `list` were new here (the rest were held already and are kept as they are: this member's own
   * stays its own when a peer's batch carries it back). `local`: uploaded or sent here, not received.
   */
  insertMany(tx: Tx, list: readonly Data[], local: boolean): number {
    return insertedCount(insertRows(tx, DATA_INSERT, DATA_CONFLICT, list.map((d) => dataRow(d, local)), DATA_PLACEHOLDERS))
  }

  /** As insertMany, for a caller that needs no count: the statements may be queued (Tx.write). */
  write(tx: Tx, list: readonly Data[], local: boolean): void {
    writeRows(tx, DATA_INSERT, DATA_CONFLICT, list.map((d) => dataRow(d, local)), DATA_PLACEHOLDERS)
  }

  /**
   * The data item a caller naming only `id` means (docs/api.md): this member's own, else the one of smallest hash,
   * then of smallest digest: the same on every member holding the same rows, whatever order they arrived in.
   * Found by the id's rows alone: whatever a peer stores under an id, the read costs no more than those rows.
   * Inside a transaction pass `tx`, so the read sees that transaction's own writes.
   */
  get(id: string, tx?: Tx): Data | undefined {
    const r = (tx ?? this.db).get<Row>(`SELECT * FROM data WHERE id = ? ORDER BY ${BY_ID} LIMIT 1`, [id])
    return r && fromRow(r)
  }

  /**
   * This member's own data item `id` (uploaded or sent here), if any: what a publication or a deletion acts on, never
   * a peer's copy under the same id.
   */
  own(id: string, tx?: Tx): Data | undefined {
    const r = (tx ?? this.db).get<Row>('SELECT * FROM data WHERE id = ? AND local = 1', [id])
    return r && fromRow(r)
  }

  /**
   * The data item a send naming `id` carries: this member's own, else a peer's when no other item shares the id (a
   * peer may reuse an id, with another value or other carried fields, and then which one is meant cannot be told).
   * A peer's comes with its digest: the sender stores it as its own (asOwn). One read of at most two of the id's rows.
   */
  toSend(id: string, tx?: Tx): Data | undefined {
    const rows = (tx ?? this.db).all<Row>(`SELECT * FROM data WHERE id = ? ORDER BY ${BY_ID} LIMIT 2`, [id])
    const first = rows[0]
    return first && (first['local'] === 1 || rows.length === 1) ? fromRow(first) : undefined
  }

  /** The data item `ref` names (see byRefs), if any. */
  byRef(ref: DataRef, tx?: Tx): Data | undefined {
    return this.byRefs([ref], tx).get(refKey(ref))
  }

  /** In the order of `refs`; missing ones are left out (the caller decides whether that is an error). */
  getMany(refs: readonly DataRef[], tx?: Tx): Data[] {
    const byRef = this.byRefs(refs, tx)
    return refs.map((r) => byRef.get(refKey(r))).filter((d): d is Data => d !== undefined)
  }

  /**
   * The data items `refs` name that are held here, by refKey (one query per few hundred refs). A reference with a
   * digest names the received row (id, hash, digest); one without names this member's own (id, hash), else (none
   * being held) the received row of that id and hash with the smallest digest.
   */
  byRefs(refs: readonly DataRef[], tx?: Tx): Map<string, Data> {
    if (refs.length === 0) return new Map()
    // A data hash does not cover its id (two items of one value share it): the pairs read are matched to `refs`.
    const rows = (tx ?? this.db).all<Row>(`SELECT * FROM data WHERE id ${IN_LIST} AND ${alsoIn('hash')}`, [inList([...new Set(refs.map((r) => r.id))]), inList([...new Set(refs.map((r) => r.hash))])])
    return matchRefs(refs, rows, fromRow)
  }

  /**
   * Records where this member's own data item's blob was published; every later batch carrying the item carries the
   * reference. A received row stays as its batch carried it.
   */
  setBlobPublic(tx: Tx, ref: DataRef, publicRef: string): void {
    tx.run('UPDATE data SET blob_public = ? WHERE id = ? AND hash = ? AND local = 1', [publicRef, ref.id, ref.hash])
  }

  /** Records where this member's own data item's value was published (schema v13): the API shows it, batches do not carry it. */
  setPublic(tx: Tx, ref: DataRef, publicRef: string): void {
    tx.run('UPDATE data SET public = ? WHERE id = ? AND hash = ? AND local = 1', [publicRef, ref.id, ref.hash])
  }

  /**
   * A message of the namespace that names the data item, if any, or that a further batch carried it with (schema
   * v20). A reference with a digest names a received row (id, hash, digest); one without names this member's own
   * item, which only a reference without a digest names (a received message's copy of it has one). Messages list
   * their data in a JSON column, so this reads the namespace's messages: it serves a deletion and the expiry of an
   * unpinned batch, not a read by id.
   */
  messageWith(namespace: string, ref: DataRef, tx?: Tx): string | undefined {
    const db = tx ?? this.db
    const [id, hash] = [`"${ref.id}"`, `"${ref.hash}"`]
    if (ref.digest === undefined) {
      return db.get<{ id: string }>(
        `SELECT m.id FROM messages m, json_each(m.data) j
          WHERE m.namespace = ? AND instr(m.data, ?) > 0 AND instr(m.data, ?) > 0
            AND json_extract(j.value, '$.id') = ? AND json_extract(j.value, '$.hash') = ? AND json_extract(j.value, '$.digest') IS NULL LIMIT 1`,
        [namespace, id, hash, ref.id, ref.hash],
      )?.id
    }
    // A received row also by its digest: another message may carry the same id and hash with other fields.
    const params = [id, hash, `"${ref.digest}"`]
    return (
      db.get<{ id: string }>('SELECT id FROM messages WHERE namespace = ? AND instr(data, ?) > 0 AND instr(data, ?) > 0 AND instr(data, ?) > 0 LIMIT 1', [namespace, ...params])?.id ??
      db.get<{ id: string }>(
        `SELECT c.message_id AS id FROM carried_messages c JOIN messages m ON m.id = c.message_id AND m.hash = c.message_hash
          WHERE m.namespace = ? AND instr(c.data, ?) > 0 AND instr(c.data, ?) > 0 AND instr(c.data, ?) > 0 LIMIT 1`,
        [namespace, ...params],
      )?.id
    )
  }

  /**
   * Deletes the received rows `refs` name that no message names any more (nor a batch's record of what it carried):
   * answers each deleted item, and whether another data item still refers to its blob. A reference without a digest
   * names this member's own item, never deleted here.
   */
  deleteUnnamed(tx: Tx, refs: readonly DataRef[]): { data: Data; blobStillUsed: boolean }[] {
    const held = new Map<string, Data>()
    for (const ref of refs) {
      const d = ref.digest === undefined ? undefined : this.byRef(ref, tx)
      if (d !== undefined) held.set(refKey(d), d)
    }
    const byNamespace = new Map<string, Data[]>()
    for (const d of held.values()) {
      const items = byNamespace.get(d.namespace)
      if (items) items.push(d)
      else byNamespace.set(d.namespace, [d])
    }
    const deleted: { data: Data; blobStillUsed: boolean }[] = []
    for (const [namespace, items] of byNamespace) {
      const named = this.namedAmong(namespace, items, tx)
      for (const d of items) if (!named.has(refKey(d))) deleted.push({ data: d, ...this.delete(tx, d) })
    }
    return deleted
  }

  /**
   * Which of the received items `items` (of namespace `namespace`) a message of the namespace names, or a batch's
   * record of what it carried with one (v20), by refKey. Messages list their data in a JSON column, so each table is
   * read once for them all (a pass's worth): a few digests narrow its rows by `instr` on each, more by reading every
   * list's references against one bound list (what costs less either way); what is found is then checked exactly.
   */
  private namedAmong(namespace: string, items: readonly Data[], tx: Tx): Set<string> {
    const named = new Set<string>()
    const note = (lists: readonly string[], wanted: ReadonlySet<string>) => {
      for (const text of lists) {
        for (const ref of JSON.parse(text) as DataRef[]) if (wanted.has(refKey(ref))) named.add(refKey(ref))
      }
    }
    const messages = items.map((d) => refKey(d))
    note(this.listsNaming(tx, 'messages', namespace, items), new Set(messages))
    // A record of what a further batch carried matters only for what no message names.
    const rest = items.filter((d) => !named.has(refKey(d)))
    if (rest.length > 0) note(this.listsNaming(tx, 'carried', namespace, rest), new Set(rest.map((d) => refKey(d))))
    return named
  }

  /** The data lists (JSON arrays of references) of messages, or carried records, of `namespace` that may name `items`. */
  private listsNaming(tx: Tx, table: 'messages' | 'carried', namespace: string, items: readonly Data[]): string[] {
    const from = table === 'messages' ? 'messages m' : 'carried_messages c JOIN messages m ON m.id = c.message_id AND m.hash = c.message_hash'
    const column = table === 'messages' ? 'm.data' : 'c.data'
    if (items.length <= INSTR_DIGESTS) {
      const quoted = items.map((d) => `"${d.digest!}"`)
      const any = quoted.map(() => `instr(${column}, ?) > 0`).join(' OR ')
      return tx.all<{ data: string }>(`SELECT ${column} AS data FROM ${from} WHERE m.namespace = ? AND (${any})`, [namespace, ...quoted]).map((r) => r.data)
    }
    const refs = `SELECT j.value AS ref FROM ${from}, json_each(${column}) j WHERE m.namespace = ? AND json_extract(j.value, '$.digest') ${IN_LIST}`
    return tx.all<{ ref: string }>(refs, [namespace, inList(items.map((d) => d.digest!))]).map((r) => `[${r.ref}]`)
  }

  /** Deletes the data item (that row alone); answers whether another data item still refers to its blob (when it had one). */
  delete(tx: Tx, d: Data): { blobStillUsed: boolean } {
    if (d.digest === undefined) tx.run('DELETE FROM data WHERE id = ? AND hash = ? AND local = 1', [d.id, d.hash])
    else tx.run('DELETE FROM data WHERE id = ? AND hash = ? AND digest = ?', [d.id, d.hash, d.digest])
    if (!d.blob) return { blobStillUsed: false }
    return { blobStillUsed: tx.get('SELECT 1 AS x FROM data WHERE blob_hash = ? LIMIT 1', [d.blob.hash]) !== undefined }
  }

  /**
   * Blob references that pending messages of registered members announce and that this node has not checked yet
   * (after a restart): a key that is no member's cannot make every member download its blobs, and a rejected
   * message's blobs are never wanted. (A message's key is its batch's: batch/verify.ts.)
   */
  blobsToFetch(): AnnouncedBlob[] {
    return this.db
      .all<{ hash: string; size: number; public: string }>(
        `SELECT DISTINCT d.blob_hash AS hash, d.blob_size AS size, d.blob_public AS public
           FROM messages m, json_each(m.data) j
           JOIN data d ON d.id = json_extract(j.value, '$.id') AND d.hash = json_extract(j.value, '$.hash')
                       AND (d.digest = json_extract(j.value, '$.digest') OR (d.local = 1 AND json_extract(j.value, '$.digest') IS NULL))
          WHERE m.state = 'pending' AND m.local = 0
            AND d.blob_hash IS NOT NULL AND d.blob_public IS NOT NULL
            AND EXISTS (SELECT 1 FROM verifiers v WHERE v.type = 'ethereum_address' AND v.value = m.key)
            AND NOT EXISTS (SELECT 1 FROM blob_refs r WHERE r.hash = d.blob_hash AND r.size = d.blob_size AND r.public = d.blob_public)`,
      )
      .map((r) => ({ hash: r.hash as Hash, size: Number(r.size), public: r.public }))
  }

  /** Bytes of the values the `list` page of the same query would hold, counted by SQLite without reading them out. */
  listValueBytes(namespace: string, q: CollectionQuery): { items: number; bytes: number } {
    const { sql, params } = listSql('value', namespace, q)
    const r = this.db.get<{ items: number; bytes: number | null }>(`SELECT COUNT(*) AS items, SUM(octet_length(value)) AS bytes FROM (${sql}) AS page`, params)
    return { items: Number(r?.items ?? 0), bytes: Number(r?.bytes ?? 0) }
  }

  /** Bytes of the values of the data items `refs` name, counted as often as each is named (as an answer repeats it). */
  valueBytes(refs: readonly DataRef[]): number {
    if (refs.length === 0) return 0
    const rows = this.db.all<RefRow & { bytes: number | null }>(`SELECT id, hash, digest, local, octet_length(value) AS bytes FROM data WHERE id ${IN_LIST} AND ${alsoIn('hash')}`, [
      inList([...new Set(refs.map((r) => r.id))]),
      inList([...new Set(refs.map((r) => r.hash))]),
    ])
    const each = matchRefs(refs, rows, (r) => Number(r.bytes ?? 0))
    return refs.reduce((sum, r) => sum + (each.get(refKey(r)) ?? 0), 0)
  }

  /** Newest first. */
  list(namespace: string, q: CollectionQuery): Data[] {
    const { sql, params } = listSql('*', namespace, q)
    return this.db.all<Row>(sql, params).map(fromRow)
  }
}

/**
 * A page of a namespace's data items, newest first: one statement for `list` and for the bytes it would answer. A
 * peer's batch carrying this member's own item back is stored as a received row beside it (own rows have no digest):
 * the list shows the own row alone (one index probe by id per row read; the page itself by `data_namespace`).
 */
function listSql(columns: string, namespace: string, q: CollectionQuery): { sql: string; params: (string | number)[] } {
  const conds = ['namespace = ?', '(local = 1 OR NOT EXISTS (SELECT 1 FROM data o WHERE o.local = 1 AND o.id = data.id AND o.hash = data.hash))']
  const params: (string | number)[] = [namespace]
  andWhere(conds, params, filterSql(q.filter, DATA_FIELDS))
  return { sql: `SELECT ${columns} FROM data WHERE ${conds.join(' AND ')} ORDER BY seq DESC LIMIT ? OFFSET ?`, params: [...params, q.limit, q.skip] }
}

/**
 * The order of the rows sharing an id in which the first is the one meant by the id alone: this member's own, then by
 * hash and digest, which every member holds alike (never by `seq`, this member's arrival order). Only own rows have
 * no digest, and they sort first.
 */
const BY_ID = 'local DESC, hash, digest'

/** What matchRefs reads of a row. */
interface RefRow {
  id: string
  hash: string
  digest: string | null
  local: number
  [k: string]: string | number | null
}

/**
 * The row each of `refs` names among `rows` (the rows of their ids and hashes), as `pick` makes it, by refKey: with a
 * digest, the received row of that digest; without, this member's own, else the received one of smallest digest.
 */
function matchRefs<R extends RefRow, T>(refs: readonly DataRef[], rows: readonly R[], pick: (r: R) => T): Map<string, T> {
  const own = new Map<string, R>()
  const received = new Map<string, R>()
  const fallback = new Map<string, R>()
  for (const r of rows) {
    if (Number(r.local) === 1 || r.digest === null) {
      own.set(refKey({ id: r.id, hash: r.hash }), r)
      continue
    }
    received.set(refKey({ id: r.id, hash: r.hash, digest: r.digest }), r)
    const pair = refKey({ id: r.id, hash: r.hash })
    const first = fallback.get(pair)
    if (first === undefined || r.digest < first.digest!) fallback.set(pair, r)
  }
  const out = new Map<string, T>()
  for (const ref of refs) {
    const key = refKey(ref)
    const row = ref.digest !== undefined ? received.get(key) : (own.get(key) ?? fallback.get(key))
    if (row !== undefined) out.set(key, pick(row))
  }
  return out
}

/**
 * The data item a read of its row answers once `d` is inserted (fromRow of what insertMany writes), without the round
 * trip: held in memory for the aggregator, it must be indistinguishable from the read it saves, key order included.
 */
export function storedData(d: Data): Data {
  // Key by key in fromRow's order (see storedMessage): one per data item a received batch holds.
  const s = { id: d.id, validator: d.validator, namespace: d.namespace, hash: d.hash, created: d.created } as Data
  if (d.datatype?.name) s.datatype = { name: d.datatype.name, version: d.datatype.version ?? '' }
  s.value = d.value ?? null
  if (d.blob?.hash) {
    const blob = { hash: d.blob.hash, size: d.blob.size ?? 0, name: d.blob.name ?? '' } as NonNullable<Data['blob']>
    if (d.blob.public) blob.public = d.blob.public
    s.blob = blob
  }
  if (d.digest) s.digest = d.digest
  return s
}

function fromRow(r: Row): Data {
  return {
    id: r.id as DataId,
    validator: r.validator,
    namespace: r.namespace,
    hash: r.hash as Hash,
    created: r.created as Timestamp,
    ...(r.datatype_name ? { datatype: { name: r.datatype_name, version: r.datatype_version ?? '' } } : {}),
    value: r.value,
    ...(r.public ? { public: r.public } : {}),
    ...(r.blob_hash
      ? { blob: { hash: r.blob_hash as Hash, size: r.blob_size ?? 0, name: r.blob_name ?? '', ...(r.blob_public ? { public: r.blob_public } : {}) } }
      : {}),
    ...(r.digest ? { digest: r.digest as Hash } : {}),
  }
}
