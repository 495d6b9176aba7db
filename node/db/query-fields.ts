/**
 * `created` as stored (Go's form, trailing fractional zeros trimmed) padded to the nine-digit key that
 * `timestampSortKey` gives a filter value, so that the two compare as instants.
 */
export const TRIMMED_TIME_KEY = (column: string): string =>
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
  // Parley's own: the hash of the message a message event is about, since its id alone may name two (schema v18).
  referencehash: { column: 'reference_hash', kind: 'text' },
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

/**
 * FireFly's DataQueryFactory, less `blob.path` (blobs live in the blob store, named by their hash), plus `sequence`. `value`
 * compares with the value's stored JSON text, exactly as it was hashed (`value=@"total"` finds a key).
 */
export const DATA_FIELDS: QueryFields = {
  id: { column: 'id', kind: 'text' },
  validator: { column: 'validator', kind: 'text' },
  'datatype.name': { column: 'datatype_name', kind: 'text' },
  'datatype.version': { column: 'datatype_version', kind: 'text' },
  hash: { column: 'hash', kind: 'text' },
  'blob.hash': { column: 'blob_hash', kind: 'text' },
  'blob.public': { column: 'blob_public', kind: 'text' },
  'blob.name': { column: 'blob_name', kind: 'text' },
  'blob.size': { column: 'blob_size', kind: 'number' },
  public: { column: 'public', kind: 'text' },
  created: { column: TRIMMED_TIME_KEY('created'), kind: 'time' },
  value: { column: 'value', kind: 'text' },
  sequence: { column: 'seq', kind: 'number' },
}

/**
 * FireFly's BatchQueryFactory, less `confirmed` (a batch records no confirmation time here). Every batch is pinned
 * by a `batch_pin` transaction, as its `tx.type` always shows, so that field is the constant.
 */
export const BATCH_FIELDS: QueryFields = {
  id: { column: 'id', kind: 'text' },
  type: { column: 'type', kind: 'text' },
  namespace: { column: 'namespace', kind: 'text' },
  node: { column: 'node', kind: 'text' },
  author: { column: 'author', kind: 'text' },
  key: { column: 'key', kind: 'text' },
  group: { column: 'grp', kind: 'text' },
  hash: { column: 'hash', kind: 'text' },
  payloadref: { column: 'payload_ref', kind: 'text' },
  created: { column: TRIMMED_TIME_KEY('created'), kind: 'time' },
  'tx.type': { column: `'batch_pin'`, kind: 'text' },
  'tx.id': { column: 'tx_id', kind: 'text' },
}

/**
 * FireFly's IdentityQueryFactory as far as this node keeps it (no verification or update messages). `profile`
 * compares with its stored JSON text.
 */
export const IDENTITY_FIELDS: QueryFields = {
  id: { column: 'id', kind: 'text' },
  did: { column: 'did', kind: 'text' },
  parent: { column: 'parent', kind: 'text' },
  'messages.claim': { column: 'message_id', kind: 'text' },
  type: { column: 'type', kind: 'text' },
  name: { column: 'name', kind: 'text' },
  description: { column: 'description', kind: 'text' },
  profile: { column: 'profile', kind: 'text' },
  created: { column: TRIMMED_TIME_KEY('created'), kind: 'time' },
  updated: { column: TRIMMED_TIME_KEY('updated'), kind: 'time' },
}

/**
 * FireFly's BlockchainEventQueryFactory, less `listener` (the BatchPin events this node reads come from no contract
 * listener), plus `sequence`. Each field compares with what the answer shows: every event is the contract's
 * `BatchPin` from the `ethereum` source in a `batch_pin` transaction, and `timestamp` is when this node received it.
 */
export const BLOCKCHAIN_EVENT_FIELDS: QueryFields = {
  id: { column: 'id', kind: 'text' },
  source: { column: `'ethereum'`, kind: 'text' },
  name: { column: `'BatchPin'`, kind: 'text' },
  protocolid: { column: 'protocol_id', kind: 'text' },
  'tx.type': { column: `'batch_pin'`, kind: 'text' },
  'tx.id': { column: 'tx_id', kind: 'text' },
  'tx.blockchainid': { column: 'tx_hash', kind: 'text' },
  timestamp: { column: TRIMMED_TIME_KEY('received'), kind: 'time' },
  sequence: { column: 'seq', kind: 'number' },
}

/**
 * FireFly's GroupQueryFactory (`hash`, `message`, `created`; its legacy `description` and `ledger` are no columns in
 * FireFly either), plus `name` and `members`. `members` compares with the sorted member list's JSON text, as the
 * answer shows it: `members=@"did:firefly:org/org1"` finds the groups of org1 (the quotes keep org10 out), and
 * `members=@<node id>` those of a node.
 */
export const GROUP_FIELDS: QueryFields = {
  hash: { column: 'hash', kind: 'text' },
  message: { column: 'message_id', kind: 'text' },
  name: { column: 'name', kind: 'text' },
  members: { column: 'members', kind: 'text' },
  created: { column: TRIMMED_TIME_KEY('created'), kind: 'time' },
}

/**
 * FireFly's SubscriptionQueryFactory (`id name transport events filters options created`), plus `updated`. `events`
 * compares with the filter's event-type expression (empty when it has none), `filters` and `options` with their
 * stored JSON text (`filters=@"tag"` finds the subscriptions filtering on a tag).
 */
export const SUBSCRIPTION_FIELDS: QueryFields = {
  id: { column: 'id', kind: 'text' },
  name: { column: 'name', kind: 'text' },
  transport: { column: 'transport', kind: 'text' },
  events: { column: `COALESCE(json_extract(filter, '$.events'), '')`, kind: 'text' },
  filters: { column: 'filter', kind: 'text' },
  options: { column: 'options', kind: 'text' },
  created: { column: TRIMMED_TIME_KEY('created'), kind: 'time' },
  updated: { column: TRIMMED_TIME_KEY('updated'), kind: 'time' },
}

/**
 * FireFly's TransactionQueryFactory, over the transactions the node reads from its batches and those it records on
 * their own (see TransactionsRepo). `blockchainids` compares with the comma-joined chain transaction hashes, as
 * FireFly's string arrays do.
 */
export const TRANSACTION_FIELDS: QueryFields = {
  id: { column: 'id', kind: 'text' },
  type: { column: 'type', kind: 'text' },
  idempotencykey: { column: 'idempotency_key', kind: 'text' },
  blockchainids: { column: 'blockchain_ids', kind: 'text' },
  created: { column: TRIMMED_TIME_KEY('created'), kind: 'time' },
}

/**
 * FireFly's OperationQueryFactory, less `retry` (an operation here is retried in place, never replaced by another).
 * `input` and `output` compare with their stored JSON text (`input=@"<batch id>"`).
 */
export const OPERATION_FIELDS: QueryFields = {
  id: { column: 'id', kind: 'text' },
  tx: { column: 'tx_id', kind: 'text' },
  type: { column: 'type', kind: 'text' },
  status: { column: 'status', kind: 'text' },
  error: { column: 'error', kind: 'text' },
  plugin: { column: 'plugin', kind: 'text' },
  input: { column: 'input', kind: 'text' },
  output: { column: 'output', kind: 'text' },
  created: { column: TRIMMED_TIME_KEY('created'), kind: 'time' },
  updated: { column: TRIMMED_TIME_KEY('updated'), kind: 'time' },
}

/**
 * FireFly's VerifierQueryFactory, less `hash`: a verifier's hash is sha256 of its namespace, type and value, which
 * the node computes when it answers (SQLite has no sha256), so it is looked up by `verifiers/{hash}` instead.
 */
export const VERIFIER_FIELDS: QueryFields = {
  identity: { column: 'identity_id', kind: 'text' },
  type: { column: 'type', kind: 'text' },
  value: { column: 'value', kind: 'text' },
  created: { column: TRIMMED_TIME_KEY('created'), kind: 'time' },
}
