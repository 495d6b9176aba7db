import { RawJson, type GoJsonValue } from '../core/json.js'
import { broadcastContext } from '../core/hashes.js'
import { batchHeaderJson, blobJson, dataJson, headerJson } from '../model/wire.js'
import { type Data, type Message, type Identity, type NodeEvent, type BatchRecord, type Datatype } from '../model/index.js'

type Obj = { [key: string]: GoJsonValue }

/**
 * A message as the API shows it, FireFly's shape. `topic` is emitted beside `topics` where the spec spells it
 * that way (query responses, events), and `batchID` beside `batch` in events.
 */
export function presentMessage(m: Message, opts: { topicAlias?: boolean; batchIdAlias?: boolean; data?: Data[] } = {}): Obj {
  const h = m.header
  return {
    header: headerJson(h, { topicAlias: opts.topicAlias ?? false }),
    localNamespace: h.namespace,
    hash: m.hash,
    ...(m.batch ? { batch: m.batch } : {}),
    ...(m.batch && opts.batchIdAlias ? { batchID: m.batch } : {}),
    ...(m.txid ? { txid: m.txid } : {}),
    state: m.state,
    ...(m.confirmed ? { confirmed: m.confirmed } : {}),
    ...(m.rejectReason ? { rejectReason: m.rejectReason } : {}),
    data: opts.data ? opts.data.map(presentInlineData) : m.data.map((r) => ({ id: r.id, hash: r.hash })),
    ...(m.pins ? { pins: m.pins } : opts.topicAlias ? { pins: h.topics.map((t) => broadcastContext(t)) } : {}),
    ...(m.idempotencyKey ? { idempotencyKey: m.idempotencyKey } : {}),
  }
}

/** A data item in full. */
export function presentData(d: Data): Obj {
  return dataJson(d)
}

/** Data inside a message fetched with its data (FireFly's MessageInOut): the value, not the blob. */
function presentInlineData(d: Data): Obj {
  return {
    id: d.id,
    hash: d.hash,
    validator: d.validator,
    ...(d.datatype ? { datatype: { name: d.datatype.name, version: d.datatype.version } } : {}),
    value: d.value === null ? null : new RawJson(d.value, true),
    ...(d.blob ? { blob: blobJson(d.blob) } : {}),
  }
}

export function presentIdentity(i: Identity, verifiers?: { type: string; value: string }[]): Obj {
  return {
    id: i.id,
    did: i.did,
    type: i.type,
    ...(i.parent ? { parent: i.parent } : {}),
    namespace: i.namespace,
    name: i.name,
    ...(i.description ? { description: i.description } : {}),
    ...(i.profile ? { profile: i.profile as Obj } : {}),
    messages: { claim: i.messages.claim },
    created: i.created,
    ...(i.updated ? { updated: i.updated } : {}),
    ...(verifiers ? { verifiers: verifiers.map((v) => ({ type: v.type, value: v.value })) } : {}),
  }
}

export function presentEvent(e: NodeEvent): Obj {
  return {
    id: e.id,
    sequence: e.sequence,
    type: e.type,
    namespace: e.namespace,
    reference: e.reference,
    ...(e.correlator ? { correlator: e.correlator } : {}),
    ...(e.tx ? { tx: e.tx } : {}),
    ...(e.topic ? { topic: e.topic } : {}),
    created: e.created,
  }
}

export function presentBatch(b: BatchRecord): Obj {
  return {
    ...batchHeaderJson(b),
    manifest: new RawJson(b.manifest, true),
    tx: { type: 'batch_pin', id: b.txId },
    ...(b.payloadRef ? { payloadRef: b.payloadRef } : {}),
    state: b.state,
    ...(b.reason ? { reason: b.reason } : {}),
  }
}

/** A datatype, FireFly's shape; the schema goes out as the exact text that was hashed. */
export function presentDatatype(d: Datatype): Obj {
  return {
    id: d.id,
    message: d.message,
    validator: d.validator,
    namespace: d.namespace,
    name: d.name,
    version: d.version,
    hash: d.hash,
    created: d.created,
    value: new RawJson(d.value, true),
  }
}
