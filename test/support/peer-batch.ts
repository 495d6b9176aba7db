import { batchPayload, parseBatch, serializeBatch } from '../../node/batch/payload.js'
import { sealManifest } from '../../node/batch/verify.js'
import { broadcastContext, dataHash, dataRefsHash, messageHash } from '../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import { storeReceivedBatch } from '../../node/aggregator/store-batch.js'
import type { BatchPayload, BatchRecord, Data, Header, Message, PinnedBatch } from '../../node/model/index.js'
import type { Aggregator } from '../../node/aggregator/aggregator.js'
import type { Repos } from './repos.js'

/** A peer's broadcast batch of one message on one topic, as it travels (its payload) and as its pin names it. */
export interface PeerBatch {
  messageId: MessageId
  pinned: PinnedBatch
  /** The payload as shared storage serves it. */
  payload: string
  /** The pin's context. */
  context: Hash
}

export function makePeerBatch(author: string, key: string, topic: string): PeerBatch {
  const id = newId<BatchId>()
  const txId = newId<TxId>()
  const valueRaw = JSON.stringify({ topic, at: now() })
  const d: Data = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw }), created: now(), value: valueRaw }
  const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author, key, created: now(), namespace: 'default', topics: [topic], datahash: dataRefsHash([{ id: d.id, hash: d.hash }]) }
  const m: Message = { header, hash: messageHash(header), state: 'pending', data: [{ id: d.id, hash: d.hash }] }
  const { manifest, hash } = sealManifest({ id, tx: { type: 'batch_pin', id: txId }, messages: [{ header, hash: m.hash, data: m.data }], data: [d] })
  const record: BatchRecord = { id, type: 'broadcast', namespace: 'default', author, key, created: now(), hash, manifest, txId, state: 'sealed', local: false }
  const payload = serializeBatch(batchPayload(record, [m], [d]))
  return { messageId: header.id, pinned: { batchId: id, batchHash: hash, txId, payloadRef: '', signer: key, eventId: newId() }, payload, context: broadcastContext(topic) }
}

/** Its pin, as the chain follower stores it. */
export function pinPeerBatch(repos: Repos, b: PeerBatch): Promise<void> {
  return repos.db.transaction((tx) =>
    repos.pins.insert(tx, { batchId: b.pinned.batchId, batchHash: b.pinned.batchHash, index: 0, hash: b.context, masked: false, signer: b.pinned.signer, eventId: b.pinned.eventId }),
  )
}

/** A peer's batch stored as the batch fetcher stores it, and pinned. */
export async function peerBatch(repos: Repos, author: string, key: string, topic: string): Promise<PeerBatch> {
  const b = makePeerBatch(author, key, topic)
  const payload = parseBatch(b.payload)
  const { manifest } = sealManifest({ id: b.pinned.batchId, tx: { type: 'batch_pin', id: b.pinned.txId }, messages: payload.messages, data: payload.data })
  await repos.db.transaction((tx) => {
    repos.batches.insert(tx, { id: b.pinned.batchId, type: 'broadcast', namespace: 'default', author, key, created: now(), hash: b.pinned.batchHash, manifest, txId: b.pinned.txId, state: 'received', local: false })
    repos.data.insertMany(tx, payload.data, false)
    repos.messages.insertMany(tx, payload.messages.map((m) => ({ header: m.header, hash: m.hash, data: m.data, state: 'pending' as const })), false)
  })
  await pinPeerBatch(repos, b)
  return b
}

/**
 * A batch fetcher's `receive` for tests without an aggregator: the batch stored as storeReceivedBatch stores it (its
 * messages pending), its id noted in `stored` once durable.
 */
export function storedNoting(repos: Repos, stored: BatchId[]): (b: BatchPayload, manifest: string, payloadRef: string) => Promise<void> {
  return async (b, manifest, payloadRef) => {
    await repos.db.transaction((tx) => storeReceivedBatch(repos, tx, b, manifest, payloadRef))
    stored.push(b.id)
  }
}

/** A batch fetcher's `receive` through a real aggregator (Aggregator.receive), the batch's id noted in `stored` once durable. */
export function receivedNoting(agg: Aggregator, stored: BatchId[]): (b: BatchPayload, manifest: string, payloadRef: string) => Promise<void> {
  return async (b, manifest, payloadRef) => {
    await agg.receive(b, manifest, payloadRef)
    stored.push(b.id)
  }
}
