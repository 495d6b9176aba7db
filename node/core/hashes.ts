/**
 * Every hash and pin formula FireFly members agree on (Go's `core.Data.CalcHash`, `MessageHeader.Hash`, `Group.CalcHash`,
 * `BatchManifest`, and the pin and context formulas of its aggregator). Each is computed over exactly the bytes
 * FireFly's Go code hashes, so a batch sealed here verifies on any member and the other way round; the unit tests
 * hold the upstream vectors.
 */
import { createHash, hash } from 'node:crypto'
import { ParleyError } from './errors.js'
import { goJson, goJsonString, goStruct } from './go-json.js'
import { parseHash, parseUuid, type BatchId, type DataId, type Hash, type IdentityId, type MessageId, type TxId } from './ids.js'
import type { Timestamp } from './time.js'

/** sha256 over the parts in order (strings as UTF-8), as 64 lowercase hex characters. */
export function sha256Hex(...parts: Array<string | Uint8Array>): Hash {
  // One-shot for a single part (every message, data and header hash): a third of the cost of a Hash object.
  if (parts.length === 1) return hash('sha256', parts[0]!, 'hex') as Hash
  const h = createHash('sha256')
  for (const p of parts) h.update(p)
  return h.digest('hex') as Hash
}

// ---- data ----

/** sha256 of a data value's JSON text exactly as held: the Go-compacted text it was received as. */
export function dataValueHash(rawValue: string): Hash {
  return sha256Hex(rawValue)
}

/**
 * A data item's hash: the value's, the blob's, or — when both are present — sha256 of the two hex hashes
 * concatenated. A value of JSON `null` (or none) counts as absent, as in Go's `Data.CalcHash`.
 */
export function dataHash(d: { valueRaw?: string | null; blobHash?: Hash | null }): Hash {
  const hasValue = d.valueRaw !== undefined && d.valueRaw !== null && d.valueRaw !== '' && d.valueRaw !== 'null'
  const blob = d.blobHash ? parseHash(d.blobHash, 'blob.hash') : undefined
  if (!hasValue && blob === undefined) throw new ParleyError('INVALID_FIELD', 'data value is null')
  if (blob === undefined) return dataValueHash(d.valueRaw as string)
  if (!hasValue) return blob
  return sha256Hex(dataValueHash(d.valueRaw as string), blob)
}

/**
 * What a batch carries with a data item beside its id and value, as a member stores it: the fields a data hash does
 * not cover (the blob's hash is covered; it is kept here too, so that the digest alone names every stored field).
 * Absent fields are null; the blob's size is a number.
 */
export interface CarriedDataFields {
  validator: string
  namespace: string
  created: string
  datatypeName: string | null
  datatypeVersion: string | null
  blobHash: string | null
  blobSize: number | null
  blobName: string | null
  blobPublic: string | null
}

/**
 * Parley's own formula, not FireFly's (which has none): the digest of the fields a batch carried with a data item.
 * A data hash covers only the value and the blob's hash, so two batches may carry one (id, hash) with another
 * datatype, validator, blob name, size or reference; with the digest, a received row is the one its batch carried
 * (docs/architecture.md, "Ids reused with other content"). sha256 of the JSON array
 * `[validator, namespace, created, datatypeName, datatypeVersion, blobHash, blobSize, blobName, blobPublic]` as
 * JSON.stringify writes it (no spaces; strings escaped as JSON does; null for absent fields).
 */
export function dataDigest(c: CarriedDataFields): Hash {
  return sha256Hex(
    JSON.stringify([c.validator, c.namespace, c.created, c.datatypeName, c.datatypeVersion, c.blobHash, c.blobSize, c.blobName, c.blobPublic]),
  )
}

export interface DataRefInput {
  id: DataId
  hash: Hash
}

/** `[{"id":..,"hash":..},...]` in message data order: the text `header.datahash` covers. */
export function dataRefsJson(refs: readonly DataRefInput[]): string {
  // Written directly (what goJson writes for these structs): parsed ids and hashes are lowercase hex, written as they are.
  let out = '['
  for (let i = 0; i < refs.length; i++) {
    const r = refs[i]!
    out += `${i === 0 ? '' : ','}{"id":"${parseUuid<DataId>(r.id, 'data id')}","hash":"${parseHash(r.hash, 'data hash')}"}`
  }
  return out + ']'
}

/** `header.datahash`; an empty list hashes `[]`. */
export function dataRefsHash(refs: readonly DataRefInput[]): Hash {
  return sha256Hex(dataRefsJson(refs))
}

// ---- message header ----

/**
 * The fields of a message that its hash covers, as Go's `core.MessageHeader`. Absent, null and "" are all "unset".
 * `type` and `txtype` are any strings: the formula hashes what a member wrote, including FireFly types this service
 * never sends (which types a batch may carry is checked where it is parsed, against the model).
 */
export interface MessageHeader {
  id: MessageId
  cid?: MessageId | null
  type: string
  txtype?: string | null
  author?: string | null
  key?: string | null
  created?: Timestamp | null
  /** The network namespace name. */
  namespace?: string | null
  /** The group hash, for a private message. */
  group?: Hash | null
  topics?: readonly string[] | null
  tag?: string | null
  datahash?: Hash | null
  txparent?: { type: string; id?: TxId | null } | null
}

const CREATED_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:Z|([+-])(\d{2}):(\d{2}))$/

/**
 * `created` as a Go member re-marshals it after parsing (RFC3339Nano in UTC, trailing zeros trimmed), so a header
 * written as `...03.120Z` or with an offset hashes as Go would hash it. The zero time marshals as `null` in Go.
 */
function goCreated(s: string): string | null {
  // What this node writes (core/time.ts) is already in that form: recognised without building a Date.
  if (CANONICAL_CREATED.test(s)) return s
  const m = CREATED_RE.exec(s)
  const bad = (): never => {
    throw new ParleyError('INVALID_FIELD', `header.created is not an RFC3339 timestamp: ${JSON.stringify(s)}`)
  }
  if (!m) return bad()
  const [y, mo, d, h, mi, sec] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  const offsetMinutes = m[8] ? (m[8] === '-' ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10])) : 0
  if (h > 23 || mi > 59 || sec > 59 || Number(m[9] ?? 0) > 23 || Number(m[10] ?? 0) > 59) return bad()
  const t = new Date(0)
  t.setUTCFullYear(y, mo - 1, d) // not Date.UTC: that maps years 0-99 to 1900-1999
  if (t.getUTCFullYear() !== y || t.getUTCMonth() !== mo - 1 || t.getUTCDate() !== d) return bad()
  t.setUTCHours(h, mi - offsetMinutes, sec, 0)
  const base = t.toISOString().slice(0, 19)
  if (!/^\d{4}-/.test(base)) return bad()
  // Go keeps nanoseconds and drops any further digits without rounding.
  const frac = (m[7] ?? '').slice(0, 9).replace(/0+$/, '')
  if (frac === '' && base === '0001-01-01T00:00:00') return null
  return `${base}${frac ? '.' + frac : ''}Z`
}

/**
 * UTC, trailing zeros trimmed, and a day every month has (29-31 go the long way), in years 1000-9999 (so neither the
 * zero time nor a year Date reads differently): the timestamps goCreated answers unchanged.
 */
const CANONICAL_CREATED = /^[1-9]\d{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{0,8}[1-9])?Z$/

const orUndefined = <T>(v: T | null | undefined | ''): T | undefined => (v === null || v === '' ? undefined : v)

/** Go's `json.Marshal(MessageHeader)`: struct field order, `omitempty` everywhere but `type`, ids and hashes normalised. */
export function messageHeaderJson(h: MessageHeader): string {
  return plainHeaderJson(h) ?? genericHeaderJson(h)
}

/** An optional string field as goJson writes it: absent, null and "" left out; undefined when it is not a string. */
function optionalText(name: string, v: unknown): string | undefined {
  if (v === undefined || v === null || v === '') return ''
  return typeof v === 'string' ? `,"${name}":${goJsonString(v)}` : undefined
}

/**
 * The same text as genericHeaderJson, written directly for the headers every send and every received batch has
 * (string fields, string topics, no txparent): without goStruct and goJson's walk, which cost more than the hash.
 * Undefined for anything else, which genericHeaderJson writes (and refuses) as before.
 */
function plainHeaderJson(h: MessageHeader): string | undefined {
  if (h.txparent || (h.type !== undefined && typeof h.type !== 'string')) return undefined
  if ((h.id !== undefined && h.id !== null && typeof h.id !== 'string') || (h.created !== undefined && h.created !== null && typeof h.created !== 'string')) return undefined
  const topics = h.topics && h.topics.length > 0 ? h.topics : undefined
  let topicsText = ''
  if (topics) {
    if (!Array.isArray(topics)) return undefined
    for (let i = 0; i < topics.length; i++) {
      const t: unknown = topics[i]
      if (typeof t !== 'string') return undefined
      topicsText += (i === 0 ? ',"topics":[' : ',') + goJsonString(t)
    }
    topicsText += ']'
  }
  const txtype = optionalText('txtype', h.txtype)
  const author = optionalText('author', h.author)
  const key = optionalText('key', h.key)
  const namespace = optionalText('namespace', h.namespace)
  const tag = optionalText('tag', h.tag)
  if (txtype === undefined || author === undefined || key === undefined || namespace === undefined || tag === undefined) return undefined
  // Checked in the generic order, so a header with several faults is refused for the same one. Ids and hashes come
  // out of their parsers as lowercase hex, which JSON writes as it is.
  const id = orUndefined(h.id) ? `,"id":"${parseUuid<MessageId>(h.id, 'header.id')}"` : ''
  const cid = h.cid ? `,"cid":"${parseUuid<MessageId>(h.cid, 'header.cid')}"` : ''
  const created = orUndefined(h.created) === undefined ? undefined : goCreated(h.created!)
  const group = h.group ? `,"group":"${parseHash(h.group, 'header.group')}"` : ''
  const datahash = h.datahash ? `,"datahash":"${parseHash(h.datahash, 'header.datahash')}"` : ''
  const fields =
    id +
    cid +
    (h.type === undefined ? '' : `,"type":${goJsonString(h.type)}`) +
    txtype +
    author +
    key +
    (created === undefined ? '' : created === null ? ',"created":null' : `,"created":"${created}"`) +
    namespace +
    group +
    topicsText +
    tag +
    datahash
  return fields === '' ? '{}' : `{${fields.slice(1)}}`
}

/** messageHeaderJson through goJson, for any header: the definition plainHeaderJson must match. */
export function genericHeaderJson(h: MessageHeader): string {
  const created = orUndefined(h.created)
  return goJson(
    goStruct(
      ['id', orUndefined(h.id) && parseUuid<MessageId>(h.id, 'header.id')],
      ['cid', h.cid ? parseUuid<MessageId>(h.cid, 'header.cid') : undefined],
      ['type', h.type],
      ['txtype', orUndefined(h.txtype)],
      ['author', orUndefined(h.author)],
      ['key', orUndefined(h.key)],
      ['created', created === undefined ? undefined : goCreated(created)],
      ['namespace', orUndefined(h.namespace)],
      ['group', h.group ? parseHash(h.group, 'header.group') : undefined],
      ['topics', h.topics && h.topics.length > 0 ? h.topics : undefined],
      ['tag', orUndefined(h.tag)],
      ['datahash', h.datahash ? parseHash(h.datahash, 'header.datahash') : undefined],
      [
        'txparent',
        h.txparent ? goStruct(['type', h.txparent.type], ['id', h.txparent.id ? parseUuid<TxId>(h.txparent.id, 'header.txparent.id') : undefined]) : undefined,
      ],
    ),
  )
}

export function messageHash(h: MessageHeader): Hash {
  return sha256Hex(messageHeaderJson(h))
}

// ---- group ----

export interface GroupMember {
  /** The member's DID. */
  identity: string
  /** The member's node identity id. */
  node?: IdentityId | null
}

export interface GroupIdentity {
  /** The network namespace name. */
  namespace?: string | null
  name: string
  members: readonly GroupMember[]
}

// Go compares strings byte by byte (UTF-8); JS `<` compares UTF-16 units, which orders some non-BMP text differently.
const compareUtf8 = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))

/**
 * Members in the order Go's `Group.Seal` sorts them (by identity). Stable, which matches Go for up to 12 members
 * (its insertion-sort range); beyond that Go's order for two entries with the same identity is not specified.
 */
export function sortGroupMembers<T extends GroupMember>(members: readonly T[]): T[] {
  return [...members].sort((a, b) => compareUtf8(a.identity, b.identity))
}

/** The JSON a group hash covers, members sorted: `{"namespace"?,"name","members":[{"identity","node"}]}`. */
export function groupJson(g: GroupIdentity): string {
  return goJson(
    goStruct(
      ['namespace', orUndefined(g.namespace)],
      ['name', g.name],
      [
        'members',
        sortGroupMembers(g.members).map((m) =>
          goStruct(['identity', orUndefined(m.identity)], ['node', m.node ? parseUuid<IdentityId>(m.node, 'member node') : undefined]),
        ),
      ],
    ),
  )
}

/** The group hash, which is also the group's id and its groupinit topic. */
export function groupHash(g: GroupIdentity): Hash {
  return sha256Hex(groupJson(g))
}

// ---- batch ----

export interface BatchManifestInput {
  id: BatchId
  txId: TxId
  /** `batch_pin` for every pinned batch. */
  txType?: string
  messages: readonly { id: MessageId; hash: Hash; topics: number }[]
  data: readonly DataRefInput[]
}

/** The manifest JSON the batch hash covers, messages and data in payload order. */
export function batchManifest(b: BatchManifestInput): string {
  // Written directly, as dataRefsJson is (genericBatchManifest is the definition it equals): parsed ids and hashes
  // are lowercase hex, written as they are; the manifest is hashed for every batch sealed and every batch received.
  let messages = ''
  for (let i = 0; i < b.messages.length; i++) {
    const m = b.messages[i]!
    messages += `${i === 0 ? '' : ','}{"id":"${parseUuid<MessageId>(m.id, 'message id')}","hash":"${parseHash(m.hash, 'message hash')}","topics":${goJson(m.topics)}}`
  }
  const id = parseUuid<BatchId>(b.id, 'batch id')
  const tx = `{"type":${goJsonString(b.txType ?? 'batch_pin')},"id":"${parseUuid<TxId>(b.txId, 'batch tx id')}"}`
  return `{"version":1,"id":"${id}","tx":${tx},"messages":[${messages}],"data":${dataRefsJson(b.data)}}`
}

/** batchManifest through goJson: the definition the direct writer must match. */
export function genericBatchManifest(b: BatchManifestInput): string {
  return goJson(
    goStruct(
      ['version', 1],
      ['id', parseUuid<BatchId>(b.id, 'batch id')],
      ['tx', goStruct(['type', b.txType ?? 'batch_pin'], ['id', parseUuid<TxId>(b.txId, 'batch tx id')])],
      [
        'messages',
        b.messages.map((m) =>
          goStruct(['id', parseUuid<MessageId>(m.id, 'message id')], ['hash', parseHash(m.hash, 'message hash')], ['topics', m.topics]),
        ),
      ],
      ['data', b.data.map((r) => goStruct(['id', parseUuid<DataId>(r.id, 'data id')], ['hash', parseHash(r.hash, 'data hash')]))],
    ),
  )
}

export function batchHash(manifestJson: string): Hash {
  return sha256Hex(manifestJson)
}

// ---- contexts and pins ----

/** The on-chain context of a broadcast message's topic. */
export function broadcastContext(topic: string): Hash {
  // Remembered: the aggregator, the broadcast dispatcher and event deliveries ask it for the same few topics thousands
  // of times a second. Bounded by starting over when full.
  let pin = contextByTopic.get(topic)
  if (pin === undefined) {
    if (contextByTopic.size >= 4096) contextByTopic.clear()
    pin = sha256Hex(topic)
    contextByTopic.set(topic, pin)
  }
  return pin
}
const contextByTopic = new Map<string, Hash>()

const groupBytes = (group: Hash): Buffer => Buffer.from(parseHash(group, 'group'), 'hex')

/** The unmasked context of a topic within a group (pre-v0.14.2 nonce key). */
export function privateContext(topic: string, group: Hash): Hash {
  return sha256Hex(topic, groupBytes(group))
}

/** The key of the sender's nonce sequence for (topic, group, author DID). */
export function nonceKey(topic: string, group: Hash, authorDid: string): Hash {
  return sha256Hex(topic, groupBytes(group), authorDid)
}

const MAX_NONCE = (1n << 63n) - 1n // Go holds nonces in an int64

function nonceBigInt(nonce: bigint | number): bigint {
  if (typeof nonce === 'number' && !Number.isSafeInteger(nonce)) throw new ParleyError('INVALID_FIELD', `nonce ${nonce} is not an integer`)
  const n = BigInt(nonce)
  if (n < 0n || n > MAX_NONCE) throw new ParleyError('INVALID_FIELD', `nonce ${n} is out of range`)
  return n
}

/** A masked pin: only group members, who know the topic, can tell which context it is. */
export function privatePin(topic: string, group: Hash, authorDid: string, nonce: bigint | number): Hash {
  const n = Buffer.alloc(8)
  n.writeBigUInt64BE(nonceBigInt(nonce))
  return sha256Hex(topic, groupBytes(group), authorDid, n)
}

/** The form a private message carries its pins in: `<hex>:<nonce zero-padded to 16 digits>` (Go's `%.16d`). */
export function formatPin(pin: Hash, nonce: bigint | number): string {
  return `${parseHash(pin, 'pin')}:${nonceBigInt(nonce).toString().padStart(16, '0')}`
}

/** Reads a `hash:nonce` pin; the nonce must fit a JS number, which any real sequence does by far. */
export function parsePin(s: string): { hash: Hash; nonce: number } {
  const m = /^(?:0x)?([0-9a-fA-F]{64}):(\d{1,19})$/.exec(s)
  const nonce = m ? Number(m[2]) : NaN
  if (!m || !Number.isSafeInteger(nonce)) throw new ParleyError('INVALID_FIELD', `not a pin (hash:nonce): ${JSON.stringify(s)}`)
  return { hash: parseHash(m[1], 'pin'), nonce }
}

// ---- definition topics ----

/** Topic of a datatype definition: sha256("datatype" ‖ namespace ‖ name); FireFly sends with namespace "". */
export function datatypeTopic(name: string, namespace = ''): Hash {
  return sha256Hex('datatype', namespace, name)
}

/** Topic of an identity claim/verification/update: sha256(DID). */
export function identityTopic(did: string): Hash {
  return sha256Hex(did)
}

// ---- on-chain uuids ----

/** The `uuids` argument of pinBatch: transaction id (16 bytes) ‖ batch id (16 bytes), `0x`-prefixed. */
export function uuidsBytes32(txId: TxId, batchId: BatchId): string {
  const hex = (u: string, what: string): string => parseUuid(u, what).replace(/-/g, '')
  return `0x${hex(txId, 'transaction id')}${hex(batchId, 'batch id')}`
}

/** The inverse of `uuidsBytes32`, for a BatchPin event's `uuids`. */
export function splitUuids(bytes32: string): { txId: TxId; batchId: BatchId } {
  const m = /^(?:0x)?([0-9a-fA-F]{64})$/.exec(bytes32)
  if (!m) throw new ParleyError('INVALID_FIELD', `uuids is not 32 bytes of hex: ${JSON.stringify(bytes32)}`)
  const hex = m[1]!.toLowerCase()
  const uuid = (h: string): string => `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
  return { txId: uuid(hex.slice(0, 32)) as TxId, batchId: uuid(hex.slice(32)) as BatchId }
}
