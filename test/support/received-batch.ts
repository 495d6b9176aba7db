import { batchPayload } from '../../node/batch/payload.js'
import { sealManifest } from '../../node/batch/verify.js'
import { broadcastContext, dataHash, dataRefsHash, messageHash } from '../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import type { BatchPayload, Data, Header, Message } from '../../node/model/index.js'
import type { Repos } from './repos.js'

/** The key and org the batches of a receiving aggregator's tests are sent by (registerOrg them). */
export const SENDER_KEY = '0x' + 'aa'.repeat(20)
export const SENDER_ORG = 'did:firefly:org/orgA'

export interface ReceivedBatch {
  payload: BatchPayload
  messages: Message[]
  data: Data[]
}

/**
 * A batch of SENDER_ORG's messages as it travels, one per topic list, after the messages (with their data) of `carried`
 * when given (a message an author sends again in another batch). `header` sets fields of every new message's header
 * (`author` per message: `authorOf`).
 */
export function makeReceivedBatch(
  topicLists: string[][],
  opts: { authorOf?: (i: number) => string; carried?: { messages: Message[]; data: Data[] }; header?: Partial<Header> } = {},
): ReceivedBatch {
  const id = newId<BatchId>()
  const txId = newId<TxId>()
  const data: Data[] = [...(opts.carried?.data ?? [])]
  const messages: Message[] = [...(opts.carried?.messages ?? [])]
  for (const [i, topics] of topicLists.entries()) {
    const valueRaw = JSON.stringify({ i, topics, at: now() })
    const d: Data = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw }), created: now(), value: valueRaw }
    data.push(d)
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: opts.authorOf?.(i) ?? SENDER_ORG, key: SENDER_KEY, created: now(), namespace: 'default', topics, datahash: dataRefsHash([{ id: d.id, hash: d.hash }]), ...opts.header }
    messages.push({ header, hash: messageHash(header), state: 'pending', data: [{ id: d.id, hash: d.hash }] })
  }
  const { hash } = sealManifest({ id, tx: { type: 'batch_pin', id: txId }, messages: messages.map((m) => ({ header: m.header, hash: m.hash, data: m.data })), data })
  const payload = batchPayload({ id, type: 'broadcast', namespace: 'default', author: SENDER_ORG, key: SENDER_KEY, created: now(), hash, manifest: '', txId, state: 'sealed', local: false }, messages, data)
  return { payload, messages, data }
}

/** Stores batch `b`'s pins as the chain follower does (one BatchPin event, signed by SENDER_KEY). */
export async function pinReceivedBatch(repos: Repos, b: BatchPayload): Promise<void> {
  await repos.db.transaction((tx) => {
    let index = 0
    const eventId = newId()
    for (const m of b.messages) for (const t of m.header.topics) repos.pins.insert(tx, { batchId: b.id, batchHash: b.hash as Hash, index: index++, hash: broadcastContext(t), masked: false, signer: SENDER_KEY, eventId })
  })
}

/** The manifest and payload reference a batch fetcher hands over with batch `b` (Aggregator.receive). */
export function handedOver(b: BatchPayload): [BatchPayload, string, string] {
  return [b, sealManifest(b).manifest, `Qm${b.id}`]
}
