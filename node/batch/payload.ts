import { ParleyError } from '../core/errors.js'
import { goJson, parseJsonRaw, type JsonNode } from '../core/json.js'
import { batchHeaderJson, dataJson, dataJsonAround, headerJson, messageJson } from '../model/wire.js'
import { parseHash, parseUuid, type BatchId, type DataId, type Hash, type MessageId, type TxId, type Uuid } from '../core/ids.js'
import { isTimestamp, type Timestamp } from '../core/time.js'
import { batchTxTypeOf, MAX_DATA_PER_MESSAGE, MAX_DATA_REFS_PER_BATCH, MAX_MESSAGES_PER_BATCH, MAX_TOPICS_PER_BATCH, MAX_TOPICS_PER_MESSAGE, MESSAGE_TYPES, type BatchPayload, type BatchRecord, type Data, type Header, type Message, type MessageType, type TxType } from '../model/index.js'


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

// The members parseBatch picks from each object of a batch (JsonNode.pick), in the order its readers destructure them.
const BATCH_MEMBERS = ['id', 'type', 'namespace', 'node', 'author', 'key', 'group', 'created', 'hash', 'payload'] as const
const PAYLOAD_MEMBERS = ['tx', 'messages', 'data'] as const
const TX_MEMBERS = ['type', 'id'] as const
const MESSAGE_MEMBERS = ['header', 'hash', 'data', 'pins'] as const
const HEADER_MEMBERS = ['id', 'cid', 'type', 'txtype', 'author', 'key', 'created', 'namespace', 'group', 'topics', 'tag', 'datahash'] as const
const REF_MEMBERS = ['id', 'hash'] as const
const DATA_MEMBERS = ['id', 'validator', 'namespace', 'hash', 'created', 'datatype', 'blob', 'value'] as const
const DATATYPE_MEMBERS = ['name', 'version'] as const
const BLOB_MEMBERS = ['hash', 'size', 'name', 'public'] as const

/**
 * The levels of a batch's text that parseBatch walks: the batch, its payload, the messages and data arrays, their
 * items, the fields of those (a header, a message's data references, a data value) and their items (topics, a
 * reference). Data values are kept as text and never walked: their direct members sit at the last level indexed, and
 * whatever they nest deeper costs no index.
 */
const BATCH_INDEX_DEPTH = 5

/** What the messages of a batch may still name in all (MAX_TOPICS_PER_BATCH, MAX_DATA_REFS_PER_BATCH), as they are read. */
interface Remaining {
  topics: number
  refs: number
  pins: number
}

/**
 * Reads a batch from a peer or from shared storage. Anything malformed is a BAD_PEER_DATA ParleyError naming what;
 * the caller refuses the batch. Data values keep their raw text so their hashes can be checked byte for byte.
 *
 * What it reads is bounded by the network's limits, not by the text's length: an array past its bound is refused, as
 * malformed like any other, before the node of the item past it is built; each item is checked as it is built and
 * none is kept beyond its turn; the members of an object are picked by name, the others never built. So a body of
 * millions of tiny items (`"messages":[0,0,…]`) is refused at the cost of its first item or of the bound, not of its
 * length.
 */
export function parseBatch(text: string): BatchPayload {
  const root = obj(parseJsonRaw(text, { indexDepth: BATCH_INDEX_DEPTH }), 'batch')
  const [idN, typeN, namespaceN, nodeN, authorN, keyN, groupN, createdN, hashN, payloadN] = root.pick(BATCH_MEMBERS)
  const [txN, messagesN, dataN] = obj(payloadN, 'payload').pick(PAYLOAD_MEMBERS)
  const [txTypeN, txIdN] = obj(txN, 'payload.tx').pick(TX_MEMBERS)
  const txType = str(txTypeN, 'payload.tx.type')
  if (txType !== 'batch_pin' && txType !== 'unpinned') fail(`payload.tx.type must be batch_pin or unpinned, not ${txType}`)
  const type = str(typeN, 'type')
  if (type !== 'broadcast' && type !== 'private') fail(`type must be broadcast or private, not ${type}`)
  const node = optStr(nodeN, 'node')
  const group = optStr(groupN, 'group')
  const id = parseUuid<BatchId>(str(idN, 'id'), 'batch id')
  const namespace = str(namespaceN, 'namespace')
  const author = str(authorN, 'author')
  const key = str(keyN, 'key')
  const groupHash = group ? parseHash(group, 'group') : undefined
  const created = timestamp(createdN, 'created')
  const hash = parseHash(str(hashN, 'hash'), 'hash')
  const txId = parseUuid<TxId>(str(txIdN, 'payload.tx.id'), 'payload.tx.id')
  const remaining: Remaining = { topics: MAX_TOPICS_PER_BATCH, refs: MAX_DATA_REFS_PER_BATCH, pins: MAX_TOPICS_PER_BATCH }
  const messages: BatchPayload['messages'] = []
  each(messagesN, MAX_MESSAGES_PER_BATCH, 'payload.messages', '', tooManyMessages, (m, i) => {
    messages.push(parseMessage(m, `payload.messages[${i}]`, remaining))
  })
  // Every data item must be referred to, and only once (verifyBatch): no more than the messages' references.
  const refs = MAX_DATA_REFS_PER_BATCH - remaining.refs
  const data: Data[] = []
  each(dataN, refs, 'payload.data', '', () => `holds more than the ${refs} data items its messages refer to`, (d, i) => {
    data.push(parseData(d, `payload.data[${i}]`))
  })
  return {
    id,
    type,
    namespace,
    ...(node ? { node } : {}),
    author,
    key,
    ...(groupHash ? { group: groupHash } : {}),
    created,
    hash,
    tx: { type: txType, id: txId },
    messages,
    data,
  }
}

// What a bound says when an array passes it; written once here, not as a closure per message.
const tooManyMessages = (): string => `holds more than ${MAX_MESSAGES_PER_BATCH} messages, the most a batch may carry`
const tooManyTopics = (): string => `takes the batch past ${MAX_TOPICS_PER_BATCH} topics, the most the messages of a batch may name`
const tooManyPins = (): string => `takes the batch past ${MAX_TOPICS_PER_BATCH} pins, the most the messages of a batch may carry`
const tooManyRefs = (): string => `takes the batch past ${MAX_DATA_REFS_PER_BATCH} data references, the most the messages of a batch may hold`

// The paths named in errors are written only when something fails: a batch of hundreds of messages would otherwise
// build a dozen strings per message that nothing reads. `where` is the element, `field` the rest of the path.
// A node picked from an object is named after its member with an N (`idN`), beside the value read from it (`id`).

function parseMessage(n: JsonNode, where: string, remaining: Remaining): BatchPayload['messages'][number] {
  const [headerN, hashN, dataN, pinsN] = obj(n, where).pick(MESSAGE_MEMBERS)
  const h = obj(headerN, where, '.header')
  const [idN, cidN, typeN, txtypeN, authorN, keyN, createdN, namespaceN, groupN, topicsN, tagN, datahashN] = h.pick(HEADER_MEMBERS)
  const type = str(typeN, where, '.header.type') as MessageType
  if (!MESSAGE_TYPES.includes(type)) fail(`${where}.header.type ${type} is not a message type`)
  const txtype = str(txtypeN, where, '.header.txtype') as TxType
  if (txtype !== 'batch_pin' && txtype !== 'none') fail(`${where}.header.txtype ${txtype} is not batch_pin or none`)
  const cid = optStr(cidN, where, '.header.cid')
  const group = optStr(groupN, where, '.header.group')
  const tag = optStr(tagN, where, '.header.tag')
  const id = uuid<MessageId>(idN, where, '.header.id')
  const cidId = cid ? uuidOf<MessageId>(cid, where, '.header.cid') : undefined
  const author = str(authorN, where, '.header.author')
  const key = str(keyN, where, '.header.key')
  const created = timestamp(createdN, where, '.header.created')
  const namespace = str(namespaceN, where, '.header.namespace')
  const groupHash = group ? hashOf(group, where, '.header.group') : undefined
  const topics = strings(topicsN, remaining.topics, where, '.header.topics', tooManyTopics)
  remaining.topics -= topics.length
  const header: Header = {
    id,
    ...(cidId ? { cid: cidId } : {}),
    type,
    txtype,
    author,
    key,
    created,
    namespace,
    ...(groupHash ? { group: groupHash } : {}),
    topics,
    ...(tag ? { tag } : {}),
    datahash: hash(datahashN, where, '.header.datahash'),
  }
  const messageHash = hash(hashN, where, '.hash')
  const refs: BatchPayload['messages'][number]['data'] = []
  remaining.refs -= each(dataN, remaining.refs, where, '.data', tooManyRefs, (r, i) => {
    const [refIdN, refHashN] = (r.kind === 'object' ? r : obj(r, where, `.data[${i}]`)).pick(REF_MEMBERS)
    refs.push({ id: uuid<DataId>(refIdN, where, `.data[${i}].id`), hash: hash(refHashN, where, `.data[${i}].hash`) })
  })
  // A message carries one pin per topic (a private one; a broadcast none). Bounded for the batch as topics are, not
  // per message: a pin list that does not fit its message is for the ordering checks to judge, which reject the
  // message and free its topic; refusing the batch here would keep its pins waiting, another verdict.
  const pins = pinsN && pinsN.kind !== 'null' ? strings(pinsN, remaining.pins, where, '.pins', tooManyPins) : undefined
  if (pins) remaining.pins -= pins.length
  return { header, hash: messageHash, data: refs, ...(pins ? { pins } : {}) }
}

function parseData(n: JsonNode, where: string): Data {
  const [idN, validatorN, namespaceN, hashN, createdN, dt, blob, value] = obj(n, where).pick(DATA_MEMBERS)
  let datatype: Data['datatype']
  if (dt && dt.kind !== 'null') {
    const [nameN, versionN] = obj(dt, where, '.datatype').pick(DATATYPE_MEMBERS)
    datatype = { name: str(nameN, where, '.datatype.name'), version: optStr(versionN, where, '.datatype.version') ?? '' }
  }
  let blobRef: Data['blob']
  if (blob && blob.kind !== 'null') {
    const [blobHashN, size, nameN, publicN] = obj(blob, where, '.blob').pick(BLOB_MEMBERS)
    if (size === undefined || size.kind !== 'number' || !Number.isSafeInteger(size.value) || (size.value as number) < 0) fail(`${where}.blob.size must be a byte count`)
    const pub = optStr(publicN, where, '.blob.public')
    blobRef = {
      hash: hash(blobHashN, where, '.blob.hash'),
      size: size!.value as number,
      name: optStr(nameN, where, '.blob.name') ?? '',
      ...(pub ? { public: pub } : {}),
    }
  }
  return {
    id: uuid<DataId>(idN, where, '.id'),
    validator: optStr(validatorN, where, '.validator') ?? 'json',
    namespace: optStr(namespaceN, where, '.namespace') ?? '',
    hash: hash(hashN, where, '.hash'),
    created: timestamp(createdN, where, '.created'),
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
/**
 * Visits the items of an array that may hold at most `atMost`, answering how many it held. One more is refused (`over`
 * says what the bound is) before its node is built: reading an overlong array costs what its bound allows, no more.
 */
function each(n: JsonNode | undefined, atMost: number, where: string, field: string, over: () => string, visit: (item: JsonNode, index: number) => void): number {
  if (!n || n.kind !== 'array') fail(`${where}${field} must be an array`)
  const count = n!.eachItem(visit, atMost)
  if (count > atMost) fail(`${where}${field} ${over()}`)
  return count
}
/** An array of strings (topics, pins), read up to `atMost` items. */
function strings(n: JsonNode | undefined, atMost: number, where: string, field: string, over: () => string): string[] {
  const list: string[] = []
  each(n, atMost, where, field, over, (s, i) => list.push(s.kind === 'string' ? text(s) : str(s, where, `${field}[${i}]`)))
  return list
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
