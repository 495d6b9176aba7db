import { expect } from 'chai'
import { parseBatch, serializeBatch } from '../../../../node/batch/payload.js'
import { sealManifest, verifyBatch } from '../../../../node/batch/verify.js'
import { dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { type BatchPayload, type Header } from '../../../../node/model/index.js'

function batch(values: string[]): BatchPayload {
  const id = newId<BatchId>()
  const txId = newId<TxId>()
  const data = values.map((valueRaw) => ({ id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw }), created: now(), value: valueRaw }))
  const messages = data.map((d) => {
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: now(), namespace: 'default', topics: ['t1'], datahash: dataRefsHash([{ id: d.id, hash: d.hash }]) }
    return { header, hash: messageHash(header), data: [{ id: d.id, hash: d.hash }] }
  })
  const b = { id, type: 'broadcast' as const, namespace: 'default', author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: now(), hash: '' as never, tx: { type: 'batch_pin' as const, id: txId }, messages, data }
  return { ...b, hash: sealManifest(b).hash }
}

describe('batch payload: written by one member, verified byte for byte by another', () => {
  it('round-trips and verifies, keeping raw values (number text, key order, escapes)', () => {
    const b = batch(['{"b":1,"a":[1,2.50,1e3]}', '"x\\u003cy"', '12345678901234567890'])
    const text = serializeBatch(b)
    const back = parseBatch(text)
    expect(back.data.map((d) => d.value)).to.deep.equal(['{"b":1,"a":[1,2.50,1e3]}', '"x\\u003cy"', '12345678901234567890'])
    expect(verifyBatch(back, { batchId: b.id, batchHash: b.hash, txId: b.tx.id })).to.equal(undefined)
  })

  it('refuses a tampered value, header, manifest or pin', () => {
    const b = batch(['{"n":1}'])
    const text = serializeBatch(b)
    const pin = { batchId: b.id, batchHash: b.hash, txId: b.tx.id }
    expect(verifyBatch(parseBatch(text.replace('{"n":1}', '{"n":2}')), pin)).to.match(/data .* hashes to/)
    expect(verifyBatch(parseBatch(text.replace('"topics":["t1"]', '"topics":["t2"]')), pin)).to.match(/header hashes to/)
    expect(verifyBatch(parseBatch(text), { ...pin, batchHash: 'f'.repeat(64) as never })).to.match(/differs from the pinned batch hash/)
    expect(verifyBatch(parseBatch(text), { ...pin, batchId: newId<BatchId>() })).to.match(/differs from the pinned batch/)
  })

  it('refuses extra or missing data, and malformed JSON', () => {
    const b = batch(['1', '2'])
    const extra = { ...b, messages: b.messages.slice(0, 1) }
    expect(verifyBatch({ ...extra, hash: sealManifest(extra).hash }, { batchId: b.id, batchHash: sealManifest(extra).hash, txId: b.tx.id })).to.contain('no message refers to')
    expect(() => parseBatch('{"id": 1}')).to.throw(/malformed batch/)
    expect(() => parseBatch('not json')).to.throw()
  })
})
