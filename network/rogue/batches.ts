/**
 * Batches a hostile member builds, with the node's own formulas (data, message, manifest and pin hashes), so that
 * what the attacks send is well formed and only the lie they carry is wrong. Pure: nothing here is sent or stored.
 */
import { encodeBase58, randomBytes } from 'ethers'
import { sealManifest } from '../../node/batch/verify.js'
import { broadcastContext, dataHash, dataRefsHash, formatPin, groupHash, identityTopic, messageHash, privatePin, sha256Hex, sortGroupMembers } from '../../node/core/hashes.js'
import { compactJson } from '../../node/core/json.js'
import { newId, type BatchId, type DataId, type Hash, type IdentityId, type MessageId, type TxId } from '../../node/core/ids.js'
import { now, type Timestamp } from '../../node/core/time.js'
import { claimValue } from '../../node/definitions/identity-claim.js'
import { groupinitFor } from '../../node/identity/group-resolver.js'
import { localIdentity, orgDid, SYSTEM_NAMESPACE, TAG_IDENTITY_CLAIM, type BatchMessage, type BatchPayload, type BlobRef, type Data, type DatatypeRef, type Group, type GroupMember, type Header } from '../../node/model/index.js'

/** Who signs a batch: the author's DID and the key its pin is sent from. */
export interface Author {
  did: string
  key: string
}

/** One message of a broadcast batch: one JSON value (or its exact text) on one topic. */
export interface BroadcastItem {
  topic: string
  value?: unknown
  /** The value's JSON text exactly (instead of `value`). */
  valueRaw?: string
  tag?: string
  type?: Header['type']
  datatype?: DatatypeRef
  blob?: BlobRef
  dataId?: string
  messageId?: string
}

/** What a pinBatch transaction carries. */
export interface PinArgs {
  txId: TxId
  batchId: BatchId
  batchHash: Hash
  payloadRef: string
  contexts: Hash[]
}

function jsonData(namespace: string, valueRaw: string, created: Timestamp, opts: { id?: string; datatype?: DatatypeRef; blob?: BlobRef } = {}): Data {
  return {
    id: (opts.id as DataId | undefined) ?? newId<DataId>(),
    validator: 'json',
    namespace,
    hash: dataHash({ valueRaw, ...(opts.blob ? { blobHash: opts.blob.hash } : {}) }),
    created,
    ...(opts.datatype ? { datatype: opts.datatype } : {}),
    value: valueRaw,
    ...(opts.blob ? { blob: opts.blob } : {}),
  }
}

/** A well-formed, self-consistent broadcast batch: one message per item, each with one JSON value (and optionally a blob). */
export function broadcastBatch(author: Author, namespace: string, items: readonly BroadcastItem[]): BatchPayload {
  const created = now()
  const data: Data[] = []
  const messages: BatchMessage[] = items.map((item) => {
    const d = jsonData(namespace, item.valueRaw ?? compactJson(JSON.stringify(item.value)), created, {
      ...(item.dataId ? { id: item.dataId } : {}),
      ...(item.datatype ? { datatype: item.datatype } : {}),
      ...(item.blob ? { blob: item.blob } : {}),
    })
    data.push(d)
    const refs = [{ id: d.id, hash: d.hash }]
    const header: Header = {
      id: (item.messageId as MessageId | undefined) ?? newId<MessageId>(),
      type: item.type ?? 'broadcast',
      txtype: 'batch_pin',
      author: author.did,
      key: author.key,
      created,
      namespace,
      topics: [item.topic],
      ...(item.tag ? { tag: item.tag } : {}),
      datahash: dataRefsHash(refs),
    }
    return { header, hash: messageHash(header), data: refs }
  })
  const id = newId<BatchId>()
  const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
  const { hash } = sealManifest({ id, tx, messages, data })
  return { id, type: 'broadcast', namespace, author: author.did, key: author.key, created, hash, tx, messages, data }
}

/** The contexts a broadcast batch pins: sha256(topic) for each topic of each message. */
export function broadcastContexts(b: BatchPayload): Hash[] {
  return b.messages.flatMap((m) => m.header.topics.map((t) => broadcastContext(t)))
}

/** An org's identity claim (a definition in the system namespace, signed by the key that becomes the org's). */
export function orgClaimBatch(name: string, key: string): BatchPayload {
  const did = orgDid(name)
  const claim = claimValue({ id: newId<IdentityId>(), did, type: 'org', name })
  return broadcastBatch({ did, key }, SYSTEM_NAMESPACE, [{ topic: identityTopic(did), valueRaw: claim, tag: TAG_IDENTITY_CLAIM, type: 'definition' }])
}

/** A group as its members would define it: members sorted, hash computed. */
export function makeGroup(namespace: string, name: string, members: readonly GroupMember[]): Group {
  const sorted = sortGroupMembers(members)
  return { hash: groupHash({ namespace, name, members: sorted }), namespace, name, members: sorted, created: now() }
}

/** One private message: a value on a topic, at the author's nonce for (topic, group). */
export interface PrivateItem {
  topic: string
  value: unknown
  nonce: number
  /** The message's id, when it takes another's. */
  messageId?: string
  /** The value's JSON text exactly (instead of `value`), its data item's id and datatype: a copy of another's item. */
  valueRaw?: string
  dataId?: string
  datatype?: DatatypeRef
}

/**
 * A pinned private batch from `author` (org `org`, node `node`) into `group`: its groupinit first when `withGroupinit`,
 * then one message per item, each with its masked pin. `id` sets the batch id (a batch delivered under another's id).
 */
export function privateBatch(
  sender: { org: string; node: string; key: string },
  group: Group,
  items: readonly PrivateItem[],
  opts: { withGroupinit?: boolean; id?: BatchId } = {},
): BatchPayload {
  const self = localIdentity(sender.org, sender.node, sender.key)
  const created = now()
  const messages: BatchMessage[] = []
  const data: Data[] = []
  if (opts.withGroupinit) {
    const init = groupinitFor(group, self, created)
    messages.push({ header: init.message.header, hash: init.message.hash, data: init.message.data, pins: [formatPin(privatePin(group.hash, group.hash, self.orgDid, 0), 0)] })
    data.push(init.data)
  }
  for (const item of items) {
    const d = jsonData(group.namespace, item.valueRaw ?? compactJson(JSON.stringify(item.value)), created, {
      ...(item.dataId ? { id: item.dataId } : {}),
      ...(item.datatype ? { datatype: item.datatype } : {}),
    })
    data.push(d)
    const refs = [{ id: d.id, hash: d.hash }]
    const header: Header = {
      id: (item.messageId as MessageId | undefined) ?? newId<MessageId>(),
      type: 'private',
      txtype: 'batch_pin',
      author: self.orgDid,
      key: self.key,
      created,
      namespace: group.namespace,
      group: group.hash,
      topics: [item.topic],
      datahash: dataRefsHash(refs),
    }
    messages.push({ header, hash: messageHash(header), data: refs, pins: [formatPin(privatePin(item.topic, group.hash, self.orgDid, item.nonce), item.nonce)] })
  }
  const id = opts.id ?? newId<BatchId>()
  const tx = { type: 'batch_pin' as const, id: newId<TxId>() }
  const { hash } = sealManifest({ id, tx, messages, data })
  return { id, type: 'private', namespace: group.namespace, node: self.nodeDid, author: self.orgDid, key: self.key, group: group.hash, created, hash, tx, messages, data }
}

/** The masked contexts a private batch pins: each message's pins, in order. */
export function privateContexts(b: BatchPayload): Hash[] {
  return b.messages.flatMap((m) => (m.pins ?? []).map((p) => p.slice(0, 64) as Hash))
}

/**
 * A CIDv0 (`Qm...`, as shared storage names a batch) of bytes nobody ever stored: a reference that parses as one
 * and resolves to nothing.
 */
export function unresolvableCid(): string {
  return encodeBase58(`0x1220${sha256Hex(randomBytes(32))}`)
}

/** A hash that is no batch's. */
export function junkHash(): Hash {
  return sha256Hex(randomBytes(32))
}

/** `n` contexts that are no topic's. */
export function garbageContexts(n: number): Hash[] {
  return Array.from({ length: n }, () => junkHash())
}

/** A pin of nothing: a fresh batch id, a junk hash, a reference that resolves to nothing, on the given contexts. */
export function garbagePinArgs(contexts: Hash[]): PinArgs {
  return { txId: newId<TxId>(), batchId: newId<BatchId>(), batchHash: junkHash(), payloadRef: unresolvableCid(), contexts }
}
