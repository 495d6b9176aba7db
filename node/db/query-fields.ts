/**
 * `created` as stored (Go's form, trailing fractional zeros trimmed) padded to the nine-digit key that
 * `timestampSortKey` gives a filter value, so that the two compare as instants.
 */
const TRIMMED_TIME_KEY = (column: string): string =>
  `SUBSTR(${column}, 1, 19) || '.' || SUBSTR(CASE WHEN INSTR(${column}, '.') > 0 THEN SUBSTR(${column}, 21, LENGTH(${column}) - 21) ELSE '' END || '000000000', 1, 9) || 'Z'`

/**
 * What each collection can be filtered on, and how each field maps to SQL (as FireFly's `query_fields.go`): the one
 * place that knows both the API's field names and the columns. `time` fields compare as sortable keys (see
 * core/time `timestampSortKey`), `number` fields as integers.
 */
export interface QueryField {
  column: string
  kind: 'text' | 'time' | 'number'
}

export type QueryFields = Readonly<Record<string, QueryField>>

/** `topics` compares with the comma-joined topic list, as FireFly does (`@` for one of several). */
export const MESSAGE_FIELDS: QueryFields = {
  id: { column: 'id', kind: 'text' },
  cid: { column: 'cid', kind: 'text' },
  type: { column: 'type', kind: 'text' },
  txtype: { column: 'txtype', kind: 'text' },
  author: { column: 'author', kind: 'text' },
  key: { column: 'key', kind: 'text' },
  tag: { column: 'tag', kind: 'text' },
  group: { column: 'grp', kind: 'text' },
  topics: { column: `REPLACE(REPLACE(REPLACE(topics, '["', ''), '"]', ''), '","', ',')`, kind: 'text' },
  state: { column: 'state', kind: 'text' },
  batch: { column: 'batch_id', kind: 'text' },
  txid: { column: 'tx_id', kind: 'text' },
  hash: { column: 'hash', kind: 'text' },
  datahash: { column: 'datahash', kind: 'text' },
  idempotencykey: { column: 'idempotency_key', kind: 'text' },
  created: { column: 'created_key', kind: 'time' },
  confirmed: { column: 'confirmed_key', kind: 'time' },
  sequence: { column: 'seq', kind: 'number' },
}

export const EVENT_FIELDS: QueryFields = {
  id: { column: 'id', kind: 'text' },
  type: { column: 'type', kind: 'text' },
  reference: { column: 'reference', kind: 'text' },
  correlator: { column: 'correlator', kind: 'text' },
  tx: { column: 'tx', kind: 'text' },
  topic: { column: 'topic', kind: 'text' },
  sequence: { column: 'seq', kind: 'number' },
  created: { column: TRIMMED_TIME_KEY('created'), kind: 'time' },
}

/** FireFly's DatatypeQueryFactory. */
export const DATATYPE_FIELDS: QueryFields = {
  id: { column: 'id', kind: 'text' },
  message: { column: 'message_id', kind: 'text' },
  validator: { column: 'validator', kind: 'text' },
  name: { column: 'name', kind: 'text' },
  version: { column: 'version', kind: 'text' },
  created: { column: TRIMMED_TIME_KEY('created'), kind: 'time' },
}
