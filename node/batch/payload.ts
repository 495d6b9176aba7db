import { ParleyError } from '../core/errors.js'
import { goJson, parseJsonRaw, type JsonNode } from '../core/json.js'
import { batchHeaderJson, dataJson, dataJsonAround, headerJson, messageJson } from '../model/wire.js'
import { parseHash, parseUuid, type BatchId, type DataId, type Hash, type MessageId, type TxId, type Uuid } from '../core/ids.js'
import { isTimestamp, type Timestamp } from '../core/time.js'
import { batchTxTypeOf, MAX_DATA_PER_MESSAGE, MAX_TOPICS_PER_MESSAGE, MESSAGE_TYPES, type BatchPayload, type BatchRecord, type Data, type Header, type Message, type MessageType, type TxType } from '../model/index.js'


/**
 * Writes a batch the way FireFly's Go code marshals `core.Batch`; data values go out as the exact text that was hashed.
 * Each message is the text `messageJson` writes (its sender wrote it already, to measure it: see rememberMessageJson);
 * the rest is written around them. serializeBatchGeneric is the definition it must equal.
 */
export function serializeBatch(b: BatchPayload): string {
  const head = goJson(batchHeaderJson(b))
  let out = `${head.slice(0, -1)}${head.length > 2 ? ',' : ''}"payload":{"tx":${goJson({ type: b.tx.type, id: b.tx.id })},"messages":[`
  for (let i = 0; i < b.messages.length; i++) out += (i === 0 ? '' : ',') + messageJson(b.messages[i]!, true)
  out += '],"data":['
  for (let i = 0; i < b.data.length; i++) {
    const d = b.data[i]!
    const { before, after } = dataJsonAround(d)
    out += (i === 0 ? '' : ',') + before + (d.value === null ? 'null' : d.value) + after
  }
  return `${out}]}}`
}

/** serializeBatch through goJson over the wire shapes: what serializeBatch must write, byte for byte. */
export function serializeBatchGeneric(b: BatchPayload): string {
  return goJson({
    ...batchHeaderJson(b),
    payload: {
      tx: { type: b.tx.type, id: b.tx.id },
      messages: b.messages.map((m) => ({
        header: headerJson(m.header),
        hash: m.hash,
        data: m.data.map((r) => ({ id: r.id, hash: r.hash })),
        ...(m.pins ? { pins: m.pins } : {}),
      })),
      data: b.data.map(dataJson),
    },
  })
}

/** The payload of a batch as its record describes it, carrying these messages and data in manifest order. */
export function batchPayload(record: BatchRecord, messages: readonly Message[], data: readonly Data[]): BatchPayload {
  return {
    id: record.id,
    type: record.type,
    namespace: record.namespace,
    ...(record.node ? { node: record.node } : {}),
    author: record.author,
    key: record.key,
    ...(record.group ? { group: record.group } : {}),
    created: record.created,
    hash: record.hash,
    tx: { type: batchTxTypeOf(messages), id: record.txId },
    messages: messages.map(batchMessage),
    data: [...data],
  }
}

export function batchMessage(m: Message): BatchPayload['messages'][number] {
  return { header: m.header, hash: m.hash, data: m.data, ...(m.pins ? { pins: m.pins } : {}) }
}

/**
 * Why a message as a batch carries it breaks a network-wide limit, or undefined. A receiver rejects such a message
 * (message_rejected, its pins consumed) rather than refusing its batch: a refused batch keeps its pins waiting, and
 * every later message on its topics with them. Senders refuse these before they send (their own limits may be lower).
 */
export function messageLimitProblem(m: { header: { topics: readonly string[] }; data: readonly unknown[] }): string | undefined {
  if (m.data.length > MAX_DATA_PER_MESSAGE) return `the message carries ${m.data.length} data items; a message may carry at most ${MAX_DATA_PER_MESSAGE}`
  if (m.header.topics.length > MAX_TOPICS_PER_MESSAGE) return `the message names ${m.header.topics.length} topics; a message may name at most ${MAX_TOPICS_PER_MESSAGE}`
  return undefined
}

/**
 * Reads a batch from a peer or from shared storage. Anything malformed is a BAD_PEER_DATA ParleyError naming what;
 * the caller refuses the batch. Data values keep their raw text so their hashes can be checked byte for byte.
 */
export function parseBatch(text: string): BatchPayload {
  const root = parseJsonRaw(text)
  const o = obj(root, 'batch')
  const payload = obj(o.get('payload'), 'payload')
  const tx = obj(payload.get('tx'), 'payload.tx')
  const txType = str(tx.get('type'), 'payload.tx.type')
  if (txType !== 'batch_pin' && txType !== 'unpinned') fail(`payload.tx.type must be batch_pin or unpinned, not ${txType}`)
  const type = str(o.get('type'), 'type')
  if (type !== 'broadcast' && type !== 'private') fail(`type must be broadcast or private, not ${type}`)
  const node = optStr(o.get('node'), 'node')
  const group = optStr(o.get('group'), 'group')
  return {
    id: parseUuid<BatchId>(str(o.get('id'), 'id'), 'batch id'),
    type,
    namespace: str(o.get('namespace'), 'namespace'),
    ...(node ? { node } : {}),
    author: str(o.get('author'), 'author'),
    key: str(o.get('key'), 'key'),
    ...(group ? { group: parseHash(group, 'group') } : {}),
    created: timestamp(o.get('created'), 'created'),
    hash: parseHash(str(o.get('hash'), 'hash'), 'hash'),
    tx: { type: txType, id: parseUuid<TxId>(str(tx.get('id'), 'payload.tx.id'), 'payload.tx.id') },
    messages: arr(payload.get('messages'), 'payload.messages').map((m, i) => parseMessage(m, `payload.messages[${i}]`)),
    data: arr(payload.get('data'), 'payload.data').map((d, i) => parseData(d, `payload.data[${i}]`)),
  }
}

// The paths named in errors are written only when something fails: a batch of hundreds of messages would otherwise
// build a dozen strings per message that nothing reads. `where` is the element, `field` the rest of the path.

function parseMessage(n: JsonNode, where: string): BatchPayload['messages'][number] {
  const m = obj(n, where)
  const h = obj(m.get('header'), where, '.header')
  const type = str(h.get('type'), where, '.header.type') as MessageType
  if (!MESSAGE_TYPES.includes(type)) fail(`${where}.header.type ${type} is not a message type`)
  const txtype = str(h.get('txtype'), where, '.header.txtype') as TxType
  if (txtype !== 'batch_pin' && txtype !== 'none') fail(`${where}.header.txtype ${txtype} is not batch_pin or none`)
  const cid = optStr(h.get('cid'), where, '.header.cid')
  const group = optStr(h.get('group'), where, '.header.group')
  const tag = optStr(h.get('tag'), where, '.header.tag')
  const header: Header = {
    id: uuid<MessageId>(h.get('id'), where, '.header.id'),
    ...(cid ? { cid: uuidOf<MessageId>(cid, where, '.header.cid') } : {}),
    type,
    txtype,
    author: str(h.get('author'), where, '.header.author'),
    key: str(h.get('key'), where, '.header.key'),
    created: timestamp(h.get('created'), where, '.header.created'),
    namespace: str(h.get('namespace'), where, '.header.namespace'),
    ...(group ? { group: hashOf(group, where, '.header.group') } : {}),
    topics: arr(h.get('topics'), where, '.header.topics').map((t, i) => (t.kind === 'string' ? text(t) : str(t, where, `.header.topics[${i}]`))),
    ...(tag ? { tag } : {}),
    datahash: hash(h.get('datahash'), where, '.header.datahash'),
  }
  const pins = m.get('pins')
  return {
    header,
    hash: hash(m.get('hash'), where, '.hash'),
    data: arr(m.get('data'), where, '.data').map((r, i) => {
      const ref = r.kind === 'object' ? r : obj(r, where, `.data[${i}]`)
      return { id: uuid<DataId>(ref.get('id'), where, `.data[${i}].id`), hash: hash(ref.get('hash'), where, `.data[${i}].hash`) }
    }),
    ...(pins && pins.kind !== 'null' ? { pins: arr(pins, where, '.pins').map((p, i) => (p.kind === 'string' ? text(p) : str(p, where, `.pins[${i}]`))) } : {}),
  }
}

function parseData(n: JsonNode, where: string): Data {
  const d = obj(n, where)
  const dt = d.get('datatype')
  const blob = d.get('blob')
  const value = d.get('value')
  let datatype: Data['datatype']
  if (dt && dt.kind !== 'null') {
    const o = obj(dt, where, '.datatype')
    datatype = { name: str(o.get('name'), where, '.datatype.name'), version: optStr(o.get('version'), where, '.datatype.version') ?? '' }
  }
  let blobRef: Data['blob']
  if (blob && blob.kind !== 'null') {
    const b = obj(blob, where, '.blob')
    const size = b.get('size')
    if (size === undefined || size.kind !== 'number' || !Number.isSafeInteger(size.value) || (size.value as number) < 0) fail(`${where}.blob.size must be a byte count`)
    const pub = optStr(b.get('public'), where, '.blob.public')
    blobRef = {
      hash: hash(b.get('hash'), where, '.blob.hash'),
      size: size!.value as number,
      name: optStr(b.get('name'), where, '.blob.name') ?? '',
      ...(pub ? { public: pub } : {}),
    }
  }
  return {
    id: uuid<DataId>(d.get('id'), where, '.id'),
    validator: optStr(d.get('validator'), where, '.validator') ?? 'json',
    namespace: optStr(d.get('namespace'), where, '.namespace') ?? '',
    hash: hash(d.get('hash'), where, '.hash'),
    created: timestamp(d.get('created'), where, '.created'),
    ...(datatype ? { datatype } : {}),
    value: value === undefined || value.kind === 'null' ? null : value.raw,
    ...(blobRef ? { blob: blobRef } : {}),
  }
}

function fail(msg: string): never {
  throw new ParleyError('BAD_PEER_DATA', `malformed batch: ${msg}`)
}
function obj(n: JsonNode | undefined, where: string, field = ''): JsonNode {
  if (!n || n.kind !== 'object') fail(`${where}${field} must be an object`)
  return n!
}
function arr(n: JsonNode | undefined, where: string, field = ''): readonly JsonNode[] {
  if (!n || n.kind !== 'array') fail(`${where}${field} must be an array`)
  return n!.items
}
function str(n: JsonNode | undefined, where: string, field = ''): string {
  if (!n || n.kind !== 'string') fail(`${where}${field} must be a string`)
  return text(n!)
}
function optStr(n: JsonNode | undefined, where: string, field = ''): string | undefined {
  if (!n || n.kind === 'null') return undefined
  return str(n, where, field)
}
function timestamp(n: JsonNode | undefined, where: string, field = ''): Timestamp {
  const s = str(n, where, field)
  if (!isTimestamp(s)) fail(`${where}${field} is not an RFC3339 UTC timestamp: ${s}`)
  return s as Timestamp
}

/** A string node's text: its raw text unquoted, unless an escape needs decoding (then what the parser decodes). */
function text(n: JsonNode): string {
  const raw = n.raw
  return raw.indexOf('\\') === -1 ? raw.slice(1, -1) : String(n.value)
}

// What parseUuid and parseHash answer for text already in their output form (what senders write), found without
// building the path they would name; anything else goes through them, with that path.
const LOWER_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const LOWER_HASH = /^[0-9a-f]{64}$/

function uuidOf<T extends Uuid>(s: string, where: string, field: string): T {
  return LOWER_UUID.test(s) ? (s as T) : parseUuid<T>(s, `${where}${field}`)
}
function uuid<T extends Uuid>(n: JsonNode | undefined, where: string, field: string): T {
  return uuidOf<T>(str(n, where, field), where, field)
}
function hashOf(s: string, where: string, field: string): Hash {
  return LOWER_HASH.test(s) ? (s as Hash) : parseHash(s, `${where}${field}`)
}
function hash(n: JsonNode | undefined, where: string, field: string): Hash {
  return hashOf(str(n, where, field), where, field)
}
