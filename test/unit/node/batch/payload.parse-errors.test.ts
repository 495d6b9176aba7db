import { expect } from 'chai'
import { parseBatch, serializeBatch } from '../../../../node/batch/payload.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { newId, type BatchId, type DataId, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import type { BatchPayload, Header } from '../../../../node/model/index.js'

/** What a peer's malformed batch is refused with: the error code and the path of what is wrong, exactly. */
describe('batch parsing: what a malformed batch is refused with', () => {
  function text(): { b: BatchPayload; json: Record<string, unknown> } {
    const d = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: '{"a":1}' }), created: now(), value: '{"a":1}' }
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0xaa', created: now(), namespace: 'default', topics: ['t1'], tag: 'x', datahash: dataRefsHash([{ id: d.id, hash: d.hash }]) }
    const b = { id: newId<BatchId>(), type: 'broadcast' as const, namespace: 'default', author: header.author, key: header.key, created: now(), hash: '' as never, tx: { type: 'batch_pin' as const, id: newId<TxId>() }, messages: [{ header, hash: messageHash(header), data: [{ id: d.id, hash: d.hash }] }], data: [d] }
    const full = { ...b, hash: sealManifest(b).hash }
    return { b: full, json: JSON.parse(serializeBatch(full)) as Record<string, unknown> }
  }

  /** The message of what parseBatch throws for the payload after `edit`, with its code. */
  function refusal(edit: (p: { messages: Record<string, unknown>[]; data: Record<string, unknown>[] }) => void): string {
    const { json } = text()
    edit(json.payload as { messages: Record<string, unknown>[]; data: Record<string, unknown>[] })
    try {
      parseBatch(JSON.stringify(json))
    } catch (err) {
      return `${(err as ParleyError).code}: ${(err as Error).message}`
    }
    return 'parsed'
  }
  const header = (p: { messages: Record<string, unknown>[] }) => p.messages[0]!.header as Record<string, unknown>

  it('names the field and its place', () => {
    expect(refusal((p) => (header(p).id = 7))).to.equal('BAD_PEER_DATA: malformed batch: payload.messages[0].header.id must be a string')
    expect(refusal((p) => (header(p).id = 'nope'))).to.equal('INVALID_ID: payload.messages[0].header.id is not a valid UUID: "nope"')
    expect(refusal((p) => (header(p).cid = 'nope'))).to.equal('INVALID_ID: payload.messages[0].header.cid is not a valid UUID: "nope"')
    expect(refusal((p) => (header(p).group = 'g'))).to.equal('INVALID_FIELD: payload.messages[0].header.group is not a 32-byte hex hash: "g"')
    expect(refusal((p) => (header(p).topics = ['a', 2]))).to.equal('BAD_PEER_DATA: malformed batch: payload.messages[0].header.topics[1] must be a string')
    expect(refusal((p) => (header(p).topics = 'a'))).to.equal('BAD_PEER_DATA: malformed batch: payload.messages[0].header.topics must be an array')
    expect(refusal((p) => (header(p).created = 'yesterday'))).to.equal('BAD_PEER_DATA: malformed batch: payload.messages[0].header.created is not an RFC3339 UTC timestamp: yesterday')
    expect(refusal((p) => (header(p).datahash = 'zz'))).to.equal('INVALID_FIELD: payload.messages[0].header.datahash is not a 32-byte hex hash: "zz"')
    expect(refusal((p) => (p.messages[0]!.hash = null))).to.equal('BAD_PEER_DATA: malformed batch: payload.messages[0].hash must be a string')
    expect(refusal((p) => (p.messages[0]!.data = [5]))).to.equal('BAD_PEER_DATA: malformed batch: payload.messages[0].data[0] must be an object')
    expect(refusal((p) => ((p.messages[0]!.data as Record<string, unknown>[])[0]!.hash = 'q'))).to.equal('INVALID_FIELD: payload.messages[0].data[0].hash is not a 32-byte hex hash: "q"')
    expect(refusal((p) => (p.messages[0]!.pins = ['a', {}]))).to.equal('BAD_PEER_DATA: malformed batch: payload.messages[0].pins[1] must be a string')
    expect(refusal((p) => (p.data[0]!.id = 'x'))).to.equal('INVALID_ID: payload.data[0].id is not a valid UUID: "x"')
    expect(refusal((p) => (p.data[0]!.blob = { hash: 'a'.repeat(64), size: -1 }))).to.equal('BAD_PEER_DATA: malformed batch: payload.data[0].blob.size must be a byte count')
    expect(refusal((p) => (p.data[0]!.datatype = { name: 1 }))).to.equal('BAD_PEER_DATA: malformed batch: payload.data[0].datatype.name must be a string')
    expect(refusal((p) => (p.data[0]!.created = 3))).to.equal('BAD_PEER_DATA: malformed batch: payload.data[0].created must be a string')
  })

  it('names what is wrong at the batch level and in the types of a header', () => {
    /** What parseBatch throws for the whole batch after `edit`, with its code. */
    const batchRefusal = (edit: (json: Record<string, unknown>) => void): string => {
      const { json } = text()
      edit(json)
      try {
        parseBatch(JSON.stringify(json))
      } catch (err) {
        return `${(err as ParleyError).code}: ${(err as Error).message}`
      }
      return 'parsed'
    }
    const payload = (json: Record<string, unknown>) => json.payload as { tx: Record<string, unknown>; messages: Record<string, unknown>[] }
    expect(batchRefusal((j) => (payload(j).tx.type = 'contract_invoke'))).to.equal('BAD_PEER_DATA: malformed batch: payload.tx.type must be batch_pin or unpinned, not contract_invoke')
    expect(batchRefusal((j) => (j.type = 'definition'))).to.equal('BAD_PEER_DATA: malformed batch: type must be broadcast or private, not definition')
    expect(batchRefusal((j) => (j.payload = []))).to.equal('BAD_PEER_DATA: malformed batch: payload must be an object')
    expect(batchRefusal((j) => (j.group = 'g'))).to.equal('INVALID_FIELD: group is not a 32-byte hex hash: "g"')
    expect(batchRefusal((j) => (j.node = 5))).to.equal('BAD_PEER_DATA: malformed batch: node must be a string')
    expect(batchRefusal((j) => (header(payload(j)).type = 'gossip'))).to.equal('BAD_PEER_DATA: malformed batch: payload.messages[0].header.type gossip is not a message type')
    expect(batchRefusal((j) => (header(payload(j)).txtype = 'unpinned'))).to.equal('BAD_PEER_DATA: malformed batch: payload.messages[0].header.txtype unpinned is not batch_pin or none')
  })

  it('reads the optional fields of a private batch and of its data, and their defaults', () => {
    const { b, json } = text()
    const group = 'ab'.repeat(32)
    const cid = newId<MessageId>()
    json.type = 'private'
    json.group = group
    json.node = 'did:firefly:node/node0'
    const payload = json.payload as { messages: Record<string, unknown>[]; data: Record<string, unknown>[] }
    Object.assign(header(payload), { type: 'private', group, cid })
    payload.messages[0]!.pins = ['cd'.repeat(32)]
    const d = payload.data[0]!
    delete d.validator
    delete d.namespace
    d.datatype = { name: 'widget' }
    d.blob = { hash: 'ef'.repeat(32), size: 12, name: 'w.bin', public: 'Qmw' }
    const back = parseBatch(JSON.stringify(json))
    expect({ type: back.type, group: back.group, node: back.node }).to.deep.equal({ type: 'private', group, node: 'did:firefly:node/node0' })
    expect(back.messages[0]!.header).to.include({ type: 'private', group, cid })
    expect(back.messages[0]!.pins).to.deep.equal(['cd'.repeat(32)])
    expect(back.data[0]).to.deep.include({ validator: 'json', namespace: '', datatype: { name: 'widget', version: '' }, blob: { hash: 'ef'.repeat(32), size: 12, name: 'w.bin', public: 'Qmw' }, value: b.data[0]!.value })
    // A blob without a name reads as the empty name, and a null value as null.
    d.blob = { hash: 'ef'.repeat(32), size: 0 }
    d.value = null
    expect(parseBatch(JSON.stringify(json)).data[0]).to.deep.include({ blob: { hash: 'ef'.repeat(32), size: 0, name: '' }, value: null })
  })

  it('reads ids and hashes in any case as their lowercase form, and strings with escapes decoded', () => {
    const { b, json } = text()
    const payload = json.payload as { messages: Record<string, unknown>[]; data: Record<string, unknown>[] }
    header(payload).id = b.messages[0]!.header.id.toUpperCase()
    header(payload).tag = 'a<b"c\u00e9'
    payload.data[0]!.hash = `0x${b.data[0]!.hash.toUpperCase()}`
    const back = parseBatch(JSON.stringify(json))
    expect(back.messages[0]!.header.id).to.equal(b.messages[0]!.header.id)
    expect(back.messages[0]!.header.tag).to.equal('a<b"c\u00e9')
    expect(back.data[0]!.hash).to.equal(b.data[0]!.hash)
  })
})
