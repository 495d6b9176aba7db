import { RawJson, type GoJsonValue } from '../core/json.js'
import type { Data } from './data.js'
import type { Header } from './message.js'

type Obj = { [key: string]: GoJsonValue }

/**
 * How a message header and a data item are written as JSON, in FireFly's field order: one shape for the batch
 * payload that travels between members and for the API that shows them. `topicAlias` adds the spec's `topic`
 * spelling beside `topics`.
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
