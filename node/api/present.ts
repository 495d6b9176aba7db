import { clientJson, RawJson, type GoJsonValue } from '../core/json.js'
import { broadcastContext } from '../core/hashes.js'
import { batchHeaderJson, blobJson, dataJson, headerJson, headerJsonText } from '../model/wire.js'
import { BATCH_PIN_EVENT_NAME, type Data, type Message, type Identity, type NodeEvent, type BatchRecord, type Datatype, type EventTransaction, type MessageTrace, type Operation, type StoredBlockchainEvent, type Transaction } from '../model/index.js'
import type { NamespacedVerifier } from '../identity/verifiers.js'
import type { NamespaceView } from '../namespace/namespaces.js'
import type { EventRenderer } from '../events/index.js'
import type { TransactionStatus } from '../operations/transaction-status.js'
import type { NodeStatus } from '../services.js'
import type { DataDigest } from '../data/digests.js'

type Obj = { [key: string]: GoJsonValue }

/**
 * A message as the API shows it, FireFly's shape. `topic` is emitted beside `topics` where Parley's API spells
 * it that way (query responses, events), and `batchID` beside `batch` in events.
 */
export function presentMessage(m: Message, opts: { topicAlias?: boolean; batchIdAlias?: boolean; data?: Data[]; digests?: readonly DataDigest[] } = {}): Obj {
  const h = m.header
  // Field by field, in FireFly's order, rather than from spreads (event deliveries present thousands a second).
  // Without the alias the header is exactly its batch form, which a send has just written (see headerJsonText).
  const o: Obj = { header: opts.topicAlias ? headerJson(h, { topicAlias: true }) : new RawJson(headerJsonText(h), true), localNamespace: h.namespace, hash: m.hash }
  if (m.batch) {
    o.batch = m.batch
    if (opts.batchIdAlias) o.batchID = m.batch
  }
  if (m.txid) o.txid = m.txid
  o.state = m.state
  if (m.confirmed) o.confirmed = m.confirmed
  if (m.rejectReason) o.rejectReason = m.rejectReason
  // `digests`: Parley's `fetchdigests` (docs/api.md), in place of FireFly's references.
  o.data = opts.data ? opts.data.map(presentInlineData) : opts.digests ? opts.digests.map((d) => (d.digest === undefined ? { id: d.id, hash: d.hash } : { id: d.id, hash: d.hash, digest: d.digest })) : m.data.map((r) => ({ id: r.id, hash: r.hash }))
  if (m.pins) o.pins = m.pins
  else if (opts.topicAlias) o.pins = h.topics.map((t) => broadcastContext(t))
  if (m.idempotencyKey) o.idempotencyKey = m.idempotencyKey
  return o
}

/** A data item in full, FireFly's shape: its value's own shared-storage reference (`public`) before its blob. */
export function presentData(d: Data): Obj {
  const o = dataJson(d)
  if (!d.public) return o
  const { blob, ...rest } = o
  return { ...rest, public: d.public, ...(blob !== undefined ? { blob } : {}) }
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
  const o: Obj = { id: e.id, sequence: e.sequence, type: e.type, namespace: e.namespace, reference: e.reference }
  if (e.correlator) o.correlator = e.correlator
  if (e.tx) o.tx = e.tx
  if (e.topic) o.topic = e.topic
  o.created = e.created
  return o
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

/**
 * A BatchPin log in FireFly's blockchain event shape. A log names no namespace (the contract serves them all), so it
 * is shown in `ns`: the namespace it was asked for, or the event's that announced it.
 */
export function presentBlockchainEvent(e: StoredBlockchainEvent, ns: string, contract: string): Obj {
  return {
    id: e.id,
    sequence: e.seq,
    source: 'ethereum',
    namespace: ns,
    name: BATCH_PIN_EVENT_NAME,
    protocolId: e.protocolId,
    output: {
      author: e.author,
      timestamp: String(e.timestamp),
      action: e.action,
      uuids: '0x' + e.txId.replace(/-/g, '') + e.batchId.replace(/-/g, ''),
      batchHash: '0x' + e.batchHash,
      payloadRef: e.payloadRef,
      contexts: e.contexts.map((c) => '0x' + c),
    },
    info: {
      address: contract,
      blockNumber: String(e.blockNumber),
      transactionIndex: '0x' + e.txIndex.toString(16),
      logIndex: String(e.logIndex),
      transactionHash: e.txHash,
      signature: 'BatchPin(address,uint256,string,bytes32,bytes32,string,bytes32[])',
    },
    timestamp: e.received,
    tx: { type: 'batch_pin', id: e.txId, blockchainId: e.txHash },
    batch: e.batchId,
  }
}

/** FireFly's Transaction, as an event carries it and as `transactions` answers it. */
export function presentTransaction(t: EventTransaction | Transaction): Obj {
  return {
    id: t.id,
    namespace: t.namespace,
    type: t.type,
    created: t.created,
    ...('idempotencyKey' in t && t.idempotencyKey ? { idempotencyKey: t.idempotencyKey } : {}),
    blockchainIds: [...t.blockchainIds],
  }
}

/** FireFly's Operation: `tx` is always there (null for a step outside any transaction), as its Go struct writes it. */
export function presentOperation(op: Operation): Obj {
  return {
    id: op.id,
    namespace: op.namespace,
    tx: op.tx ?? null,
    type: op.type,
    status: op.status,
    plugin: op.plugin,
    input: plainFields(op.input),
    ...(op.output ? { output: plainFields(op.output) } : {}),
    ...(op.error ? { error: op.error } : {}),
    created: op.created,
    updated: op.updated,
  }
}

function plainFields(f: Operation['input']): Obj {
  return Object.fromEntries(Object.entries(f).map(([k, v]) => [k, typeof v === 'string' ? v : [...v]]))
}

/** FireFly's TransactionStatus: its status, and each part with the time and id of what it reports on. */
export function presentTransactionStatus(st: TransactionStatus, ns: string, contract: string): Obj {
  const details = st.details.map((d): Obj => {
    switch (d.kind) {
      case 'operation': {
        const op = d.operation
        return { type: 'Operation', subtype: op.type, status: op.status, timestamp: op.updated, id: op.id, ...(op.error ? { error: op.error } : {}), ...(op.output ? { info: plainFields(op.output) } : {}) }
      }
      case 'blockchainEvent': {
        const e = presentBlockchainEvent(d.event, ns, contract)
        return { type: 'BlockchainEvent', subtype: BATCH_PIN_EVENT_NAME, status: 'Succeeded', timestamp: e.timestamp!, id: d.event.id, info: e.info! }
      }
      case 'batch':
        return { type: 'Batch', subtype: d.batch.type, status: 'Succeeded', id: d.batch.id }
      case 'pending':
        return { type: d.of, status: 'Pending' }
    }
  })
  return { status: st.status, details }
}

/**
 * FireFly's NamespaceMultipartyStatus from the member's status: whether its org and node are registered, and the
 * BatchPin contract it follows, `synced` once it has processed the chain's newest block it knows of.
 */
export function presentMultipartyStatus(st: NodeStatus): Obj {
  const registration = (registered: boolean): Obj => ({ status: registered ? 'registered' : 'unregistered' })
  const chain = st.chain
  const listener = !chain.connected || chain.headBlock === undefined ? 'unknown' : chain.lastProcessedBlock >= chain.headBlock ? 'synced' : 'syncing'
  const active = st.multiparty.contract.active
  return {
    enabled: true,
    org: registration(st.org.registered),
    node: registration(st.node.registered),
    contracts: {
      active: {
        index: active.index,
        location: { address: active.location.address },
        firstEvent: String(active.firstEvent),
        info: chain.networkVersion !== undefined ? { version: chain.networkVersion } : {},
        status: listener,
      },
    },
  }
}

/** FireFly's Verifier. */
export function presentVerifier(v: NamespacedVerifier): Obj {
  return { hash: v.hash, identity: v.identity, namespace: v.namespace, type: v.type, value: v.value, created: v.created }
}

/** FireFly's Namespace (its contracts and TLS settings are not part of its JSON). */
export function presentNamespace(n: NamespaceView): Obj {
  return { name: n.name, networkName: n.networkName, description: n.description, created: n.created }
}

/**
 * Events with the objects they refer to, as FireFly delivers them (`EventDelivery` without `subscription`) and as
 * `GET events?fetchreferences=true` lists them: the event's fields, then the one object its type refers to, if held.
 */
export function eventRenderer(opts: { contract: string }, message: (m: Message) => GoJsonValue = presentEventMessage): EventRenderer {
  return ({ event, refs }) => {
    const o = presentEvent(event)
    if (refs.message) o.message = message(refs.message)
    if (refs.datatype) o.datatype = presentDatatype(refs.datatype)
    if (refs.identity) o.identity = presentIdentity(refs.identity)
    if (refs.transaction) o.transaction = presentTransaction(refs.transaction)
    if (refs.blockchainEvent) o.blockchainEvent = presentBlockchainEvent(refs.blockchainEvent, event.namespace, opts.contract)
    return o
  }
}

/** An event's message; with `digests` (`fetchdigests`, Parley-only), its data items' digests beside their ids and hashes. */
export function presentEventMessage(m: Message, digests?: readonly DataDigest[]): Obj {
  return presentMessage(m, { topicAlias: true, batchIdAlias: true, ...(digests ? { digests } : {}) })
}

/**
 * The renderer of event frames: eventRenderer, with each message's JSON written once per Message object and kept
 * beside it. Settled messages come from the repository's cache as the same object delivery after delivery, so a
 * message delivered to several subscriptions, or again, is not written again. The text is clientJson's, so this is
 * for clients' frames only, never for REST answers (goJson's exact bytes).
 */
export function eventFrameRenderer(opts: { contract: string }): EventRenderer {
  const texts = new WeakMap<Message, RawJson>()
  return eventRenderer(opts, (m) => {
    let text = texts.get(m)
    if (!text) texts.set(m, (text = new RawJson(clientJson(presentEventMessage(m)), true)))
    return text
  })
}

/**
 * A message trace (node/trace) as built: the message, this member, its state, its timeline oldest first, and `waiting`
 * only while the message is neither confirmed nor rejected. Each step and the waiting reason carry only the fields that
 * apply (all plain values).
 */
export function presentTrace(t: MessageTrace): Obj {
  return {
    message: t.message,
    org: t.org,
    node: t.node,
    state: t.state,
    timeline: t.timeline.map(plainObject),
    ...(t.waiting ? { waiting: plainObject(t.waiting) } : {}),
  }
}

/** An object of JSON values (strings, numbers, booleans, and objects of them) without its undefined fields. */
function plainObject(o: object): Obj {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Obj
}
