import { batchHash, batchManifest, dataHash, dataRefsHash, messageHash } from '../core/hashes.js'
import type { BatchId, Hash, TxId } from '../core/ids.js'
import { type BatchPayload } from '../model/index.js'

export interface PinnedBatchRef {
  batchId: BatchId
  batchHash: Hash
  txId: TxId
}

/** The manifest of a batch and its hash, from its messages and data in payload order. */
export function sealManifest(b: Pick<BatchPayload, 'id' | 'tx' | 'messages' | 'data'>): { manifest: string; hash: Hash } {
  const manifest = batchManifest({
    id: b.id,
    txId: b.tx.id,
    txType: b.tx.type,
    messages: b.messages.map((m) => ({ id: m.header.id, hash: m.hash, topics: m.header.topics.length })),
    data: b.data.map((d) => ({ id: d.id, hash: d.hash })),
  })
  return { manifest, hash: batchHash(manifest) }
}

/**
 * Checks a received batch against the pin that ordered it and against itself: the manifest hash, every message
 * hash and datahash, every data hash, the author and key of each message, and that it carries exactly the data
 * its messages refer to. Answers why it must be refused, or undefined when it verifies.
 */
export function verifyBatch(b: BatchPayload, pin: PinnedBatchRef): string | undefined {
  const checked = checkBatch(b, pin)
  return checked.ok ? undefined : checked.reason
}

/** verifyBatch, answering the manifest it computed when the batch verifies (so the receiver need not compute it again). */
export function checkBatch(b: BatchPayload, pin: PinnedBatchRef): { ok: true; manifest: string } | { ok: false; reason: string } {
  const reason = (r: string) => ({ ok: false as const, reason: r })
  if (b.id !== pin.batchId) return reason(`batch id ${b.id} differs from the pinned batch ${pin.batchId}`)
  if (b.tx.id !== pin.txId) return reason(`transaction id ${b.tx.id} differs from the pinned ${pin.txId}`)
  if (b.messages.length === 0) return reason('the batch holds no messages')
  const { manifest, hash } = sealManifest(b)
  const problem = verifyContent(b, pin, hash)
  return problem === undefined ? { ok: true, manifest } : reason(problem)
}

function verifyContent(b: BatchPayload, pin: PinnedBatchRef, hash: Hash): string | undefined {
  if (hash !== pin.batchHash) return `manifest hash ${hash} differs from the pinned batch hash ${pin.batchHash}`
  if (hash !== b.hash) return `manifest hash ${hash} differs from the batch's own hash ${b.hash}`

  const dataById = new Map(b.data.map((d) => [d.id as string, d]))
  if (dataById.size !== b.data.length) return 'the batch holds the same data id twice'
  for (const d of b.data) {
    // The data hash does not cover the namespace: a batch must not place data in another namespace than its own.
    if (d.namespace !== '' && d.namespace !== b.namespace) return `data ${d.id} is in namespace ${d.namespace}, the batch in ${b.namespace}`
    let h: Hash
    try {
      h = dataHash({ valueRaw: d.value, ...(d.blob ? { blobHash: d.blob.hash } : {}) })
    } catch {
      return `data ${d.id} has neither a value nor a blob`
    }
    if (h !== d.hash) return `data ${d.id} hashes to ${h}, not ${d.hash}`
  }

  const referenced = new Set<string>()
  const seen = new Set<string>()
  for (const m of b.messages) {
    const h = m.header
    if (seen.has(h.id)) return `message ${h.id} appears twice`
    seen.add(h.id)
    if (h.namespace !== b.namespace) return `message ${h.id} is in namespace ${h.namespace}, the batch in ${b.namespace}`
    if (h.author !== b.author || h.key !== b.key) return `message ${h.id} is signed by ${h.author}/${h.key}, the batch by ${b.author}/${b.key}`
    if (h.topics.length === 0) return `message ${h.id} has no topics`
    const mh = messageHash(h)
    if (mh !== m.hash) return `message ${h.id} header hashes to ${mh}, not ${m.hash}`
    const dh = dataRefsHash(m.data)
    if (dh !== h.datahash) return `message ${h.id} data refs hash to ${dh}, not ${h.datahash}`
    for (const ref of m.data) {
      const d = dataById.get(ref.id)
      if (!d) return `message ${h.id} refers to data ${ref.id} that the batch does not carry`
      if (d.hash !== ref.hash) return `message ${h.id} refers to data ${ref.id} with hash ${ref.hash}, the batch carries ${d.hash}`
      referenced.add(ref.id)
    }
  }
  if (referenced.size !== b.data.length) return 'the batch carries data that no message refers to'
  return undefined
}
