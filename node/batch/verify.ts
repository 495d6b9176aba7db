import { batchHash, batchManifest, dataHash, dataRefsHash, messageHeaderJson, sha256Hex, type DataRefInput, type MessageHeader } from '../core/hashes.js'
import { goJsonString } from '../core/json.js'
import type { BatchId, Hash, TxId } from '../core/ids.js'
import { type BatchPayload } from '../model/index.js'

export interface PinnedBatchRef {
  batchId: BatchId
  batchHash: Hash
  txId: TxId
}

/** The manifest of a batch and its hash, from its messages and data in payload order. */
export function sealManifest(b: Pick<BatchPayload, 'id' | 'tx' | 'messages' | 'data'>): { manifest: string; hash: Hash } {
  const manifest = plainManifestJson(b) ?? batchManifest({
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
    const mh = sha256Hex(plainHeaderJson(h) ?? messageHeaderJson(h))
    if (mh !== m.hash) return `message ${h.id} header hashes to ${mh}, not ${m.hash}`
    const refs = plainRefsJson(m.data)
    const dh = refs === undefined ? dataRefsHash(m.data) : sha256Hex(refs)
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

// The texts the hashes cover, written directly for what parsed batches and sealed messages hold: lowercase ids and
// hashes, canonical timestamps, printable ASCII. core/hashes.ts writes them through goJson, normalising and checking
// every field on the way, which is what verifying a batch spent most of its time on. Each writer answers undefined for
// anything else, and the caller falls back to core/hashes.ts (which also throws where it would): the texts are equal.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const HASH = /^[0-9a-f]{64}$/
/** Printable ASCII that goJsonString writes unchanged: all but `"` `\\` `<` `>` `&`. */
const PLAIN = /^[ !#-%'-;=?-[\]-~]*$/
/** RFC3339 in UTC as Go writes it back: fraction without trailing zeros. Ranges are checked in `canonicalCreated`. */
const CREATED = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{0,8}[1-9])?Z$/

const plain = (s: string): string => (PLAIN.test(s) ? `"${s}"` : goJsonString(s))

/** An optional string field as goStruct writes it after orUndefined; false when it is not a string to write. */
function optional(name: string, v: unknown): string | false {
  if (v === undefined || v === null || v === '') return ''
  return typeof v === 'string' ? `,"${name}":${plain(v)}` : false
}

/** Whether Go writes `s` back unchanged: a real instant in UTC, in its own form, and not the zero time (`null`). */
function canonicalCreated(s: string): boolean {
  const m = CREATED.exec(s)
  if (!m) return false
  const y = Number(m[1])
  const mo = Number(m[2])
  const d = Number(m[3])
  if (mo < 1 || mo > 12 || d < 1 || Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6]) > 59) return false
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0)
  if (d > (mo === 2 ? (leap ? 29 : 28) : mo === 4 || mo === 6 || mo === 9 || mo === 11 ? 30 : 31)) return false
  return !s.startsWith('0001-01-01T00:00:00Z')
}

/** messageHeaderJson(h), or undefined when `h` holds anything it would normalise, omit otherwise, or refuse. */
export function plainHeaderJson(h: MessageHeader): string | undefined {
  if (typeof h.id !== 'string' || !UUID.test(h.id) || typeof h.type !== 'string' || h.txparent) return undefined
  const cid = h.cid ? (UUID.test(h.cid) ? `,"cid":"${h.cid}"` : false) : ''
  const txtype = optional('txtype', h.txtype)
  const author = optional('author', h.author)
  const key = optional('key', h.key)
  const created = h.created === undefined || h.created === null || h.created === '' ? '' : typeof h.created === 'string' && canonicalCreated(h.created) ? `,"created":"${h.created}"` : false
  const namespace = optional('namespace', h.namespace)
  const group = h.group ? (HASH.test(h.group) ? `,"group":"${h.group}"` : false) : ''
  let topics = ''
  if (h.topics && h.topics.length > 0) {
    if (!Array.isArray(h.topics)) return undefined
    const list: string[] = []
    for (const t of h.topics as readonly unknown[]) {
      if (typeof t !== 'string') return undefined
      list.push(plain(t))
    }
    topics = `,"topics":[${list.join(',')}]`
  }
  const tag = optional('tag', h.tag)
  const datahash = h.datahash ? (HASH.test(h.datahash) ? `,"datahash":"${h.datahash}"` : false) : ''
  if (cid === false || txtype === false || author === false || key === false || created === false || namespace === false || group === false || tag === false || datahash === false) return undefined
  return `{"id":"${h.id}"${cid},"type":${plain(h.type)}${txtype}${author}${key}${created}${namespace}${group}${topics}${tag}${datahash}}`
}

/** `[{"id":..,"hash":..},...]` as dataRefsJson writes it, or undefined when an id or hash is not in its plain form. */
export function plainRefsJson(refs: readonly DataRefInput[]): string | undefined {
  let out = '['
  for (let k = 0; k < refs.length; k++) {
    const { id, hash } = refs[k]!
    if (typeof id !== 'string' || typeof hash !== 'string' || !UUID.test(id) || !HASH.test(hash)) return undefined
    out += `${k > 0 ? ',' : ''}{"id":"${id}","hash":"${hash}"}`
  }
  return out + ']'
}

/** batchManifest's text for a batch, or undefined when an id or hash is not in its plain form. */
function plainManifestJson(b: Pick<BatchPayload, 'id' | 'tx' | 'messages' | 'data'>): string | undefined {
  if (typeof b.id !== 'string' || !UUID.test(b.id) || typeof b.tx.id !== 'string' || !UUID.test(b.tx.id) || typeof b.tx.type !== 'string') return undefined
  const messages: string[] = []
  for (const m of b.messages) {
    const { id } = m.header
    if (typeof id !== 'string' || typeof m.hash !== 'string' || !UUID.test(id) || !HASH.test(m.hash) || !Array.isArray(m.header.topics)) return undefined
    messages.push(`{"id":"${id}","hash":"${m.hash}","topics":${m.header.topics.length}}`)
  }
  const data = plainRefsJson(b.data)
  if (data === undefined) return undefined
  return `{"version":1,"id":"${b.id}","tx":{"type":${plain(b.tx.type)},"id":"${b.tx.id}"},"messages":[${messages.join(',')}],"data":${data}}`
}
