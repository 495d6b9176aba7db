import { goJson, goJsonString, RawJson, type GoJsonValue } from '../core/json.js'
import type { Data } from './data.js'
import type { Header } from './message.js'
import type { BatchMessage } from './batch.js'

type Obj = { [key: string]: GoJsonValue }

/**
 * How a message header and a data item are written as JSON, in FireFly's field order: one shape for the batch
 * payload that travels between members and for the API that shows them. `topicAlias` adds the `topic`
 * spelling beside `topics` (Parley's API shows both; docs/api.md).
 */
export function headerJson(h: Header, opts: { topicAlias?: boolean } = {}): Obj {
  // Built field by field rather than from spreads: event deliveries write thousands a second, and each spread
  // was a throwaway object.
  const o: Obj = { id: h.id }
  if (h.cid) o.cid = h.cid
  o.type = h.type
  o.txtype = h.txtype
  o.author = h.author
  o.key = h.key
  o.created = h.created
  o.namespace = h.namespace
  if (h.group) o.group = h.group
  o.topics = h.topics
  if (opts.topicAlias) o.topic = h.topics
  if (h.tag) o.tag = h.tag
  o.datahash = h.datahash
  return o
}

/** A data item with its value as the exact text that was hashed. */
export function dataJson(d: Data): Obj {
  return {
    id: d.id,
    validator: d.validator,
    namespace: d.namespace,
    hash: d.hash,
    created: d.created,
    ...(d.datatype ? { datatype: { name: d.datatype.name, version: d.datatype.version } } : {}),
    value: d.value === null ? null : new RawJson(d.value, true),
    ...(d.blob ? { blob: blobJson(d.blob) } : {}),
  }
}

export function blobJson(b: NonNullable<Data['blob']>): Obj {
  return { hash: b.hash, size: b.size, name: b.name, ...(b.public ? { public: b.public } : {}) }
}

/** The header fields of a batch (FireFly's BatchHeader, then its hash), shared by the payload and the API. */
export function batchHeaderJson(b: { id: string; type: string; namespace: string; node?: string; author: string; key: string; group?: string; created: string; hash: string }): Obj {
  return {
    id: b.id,
    type: b.type,
    namespace: b.namespace,
    ...(b.node ? { node: b.node } : {}),
    author: b.author,
    key: b.key,
    ...(b.group ? { group: b.group } : {}),
    created: b.created,
    hash: b.hash,
  }
}

/**
 * `goJson(headerJson(h))` written directly: a batch payload writes one per message, and goJson's generic walk over
 * the object headerJson builds cost several times the text. A header with a field of a type goJson would write some
 * other way (not a string, topics not strings) goes through goJson.
 */
export function headerJsonText(h: Header): string {
  return writtenMessages.get(h)?.header ?? writeHeaderJson(h)
}

/** `,"name":value` as goJson writes a string field; nothing when it is undefined. */
function field(name: string, v: string | undefined): string {
  return v === undefined ? '' : `,"${name}":${goJsonString(v)}`
}

function writeHeaderJson(h: Header): string {
  const { topics } = h
  if (!Array.isArray(topics)) return goJson(headerJson(h))
  let topicsText = ''
  for (let i = 0; i < topics.length; i++) {
    const t: unknown = topics[i]
    if (typeof t !== 'string') return goJson(headerJson(h))
    topicsText += (i === 0 ? '' : ',') + goJsonString(t)
  }
  // headerJson leaves cid, group and tag out when empty; the rest goJson leaves out only when undefined.
  const always = [h.id, h.type, h.txtype, h.author, h.key, h.created, h.namespace, h.datahash] as unknown[]
  for (const v of always) if (v !== undefined && typeof v !== 'string') return goJson(headerJson(h))
  for (const v of [h.cid, h.group, h.tag] as unknown[]) if (v && typeof v !== 'string') return goJson(headerJson(h))
  const text =
    field('id', h.id) +
    (h.cid ? field('cid', h.cid) : '') +
    field('type', h.type) +
    field('txtype', h.txtype) +
    field('author', h.author) +
    field('key', h.key) +
    field('created', h.created) +
    field('namespace', h.namespace) +
    (h.group ? field('group', h.group) : '') +
    `,"topics":[${topicsText}]` +
    (h.tag ? field('tag', h.tag) : '') +
    field('datahash', h.datahash)
  return `{${text.slice(1)}}`
}

/**
 * `goJson(dataJson(d))` as the text before and after the value, written directly: the value (which may be megabytes)
 * goes between them as it is, so a caller can measure or write the item without copying it.
 */
export function dataJsonAround(d: Data): { before: string; after: string } {
  const plain = [d.id, d.validator, d.namespace, d.hash, d.created] as unknown[]
  const dt = d.datatype
  const blob = d.blob
  if (
    plain.some((v) => v !== undefined && typeof v !== 'string') ||
    (dt && (typeof dt.name !== 'string' || typeof dt.version !== 'string')) ||
    (blob && (typeof blob.hash !== 'string' || typeof blob.name !== 'string' || typeof blob.size !== 'number' || (blob.public && typeof blob.public !== 'string')))
  ) {
    const text = goJson(dataJson({ ...d, value: null }))
    const at = text.indexOf('"value":null') + '"value":'.length
    return { before: text.slice(0, at), after: text.slice(at + 'null'.length) }
  }
  const head =
    field('id', d.id) +
    field('validator', d.validator) +
    field('namespace', d.namespace) +
    field('hash', d.hash) +
    field('created', d.created) +
    (dt ? `,"datatype":{"name":${goJsonString(dt.name)},"version":${goJsonString(dt.version)}}` : '') +
    ',"value":'
  const blobText = blob ? goJson(blobJson(blob)) : ''
  return { before: `{${head.slice(1)}`, after: blob ? `,"blob":${blobText}}` : '}' }
}

/**
 * Message texts written before their batch is (a sender measures each message it accepts), up to their pins: keyed by
 * the header, and used only for a message with that same hash and data list, which the header's hashes cover.
 * A WeakMap, so a message that never reaches a batch takes its text with it; serializeBatch (batch/payload.ts) drops
 * what it used.
 */
const writtenMessages = new WeakMap<Header, { header: string; hash: string; data: readonly unknown[]; text: string }>()

/**
 * Writes the message as a batch carries it and keeps the text for its batch (see serializeBatch); its header's text
 * also serves headerJsonText (the answer to the send shows the header).
 */
export function rememberMessageJson(m: BatchMessage): string {
  const header = writeHeaderJson(m.header)
  const text = messageJsonOpen(m, header)
  writtenMessages.set(m.header, { header, hash: m.hash, data: m.data, text })
  return closeMessageJson(text, m)
}

/** A message as a batch carries it: `{"header":..,"hash":..,"data":[..],"pins"?:[..]}`. */
export function messageJson(m: BatchMessage, consume = false): string {
  const known = writtenMessages.get(m.header)
  if (known === undefined || known.hash !== m.hash || known.data !== m.data) return closeMessageJson(messageJsonOpen(m, known?.header ?? writeHeaderJson(m.header)), m)
  if (consume) writtenMessages.delete(m.header)
  return closeMessageJson(known.text, m)
}

function messageJsonOpen(m: BatchMessage, header: string): string {
  let refs = ''
  for (let i = 0; i < m.data.length; i++) {
    const r = m.data[i]!
    refs += (i === 0 ? '' : ',') + (typeof r.id === 'string' && typeof r.hash === 'string' ? `{"id":${goJsonString(r.id)},"hash":${goJsonString(r.hash)}}` : goJson({ id: r.id, hash: r.hash }))
  }
  return `{"header":${header}${m.hash === undefined ? '' : `,"hash":${goJsonString(m.hash)}`},"data":[${refs}]`
}

function closeMessageJson(open: string, m: BatchMessage): string {
  return m.pins ? `${open},"pins":${goJson(m.pins)}}` : `${open}}`
}
