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
  created: { column: 'created', kind: 'text' },
}

/**
 * FireFly's DatatypeQueryFactory. `created` is stored in Go's trimmed form, so it is compared through the same
 * nine-digit padding `timestampSortKey` gives the filter value.
 */
export const DATATYPE_FIELDS: QueryFields = {
  id: { column: 'id', kind: 'text' },
  message: { column: 'message_id', kind: 'text' },
  validator: { column: 'validator', kind: 'text' },
  name: { column: 'name', kind: 'text' },
  version: { column: 'version', kind: 'text' },
  created: {
    column: `SUBSTR(created, 1, 19) || '.' || SUBSTR(CASE WHEN INSTR(created, '.') > 0 THEN SUBSTR(created, 21, LENGTH(created) - 21) ELSE '' END || '000000000', 1, 9) || 'Z'`,
    kind: 'time',
  },
}
