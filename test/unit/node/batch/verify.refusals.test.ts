import { expect } from 'chai'
import { checkBatch, sealManifest, verifyBatch, type PinnedBatchRef } from '../../../../node/batch/verify.js'
import { dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import type { BatchPayload, Data, DataRef, Header } from '../../../../node/model/index.js'

/**
 * What a peer's batch is refused for once it parses: each check of verifyBatch, reached with every check before it
 * passing (each message's hashes and the manifest are computed over the altered content, as a lying peer would), so
 * the reason answered is the one that check gives.
 */
describe('batch verification: why a parsed batch is refused', () => {
  const author = 'did:firefly:org/org0'
  const key = '0x' + 'aa'.repeat(20)

  function datum(value: string, fields: Partial<Data> = {}): Data {
    return { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: value }), created: now(), value, ...fields }
  }
  const ref = (d: Data): DataRef => ({ id: d.id, hash: d.hash })

  /** A message whose header and data-refs hashes are right for what it holds. */
  function message(refs: DataRef[], fields: Partial<Header> = {}): BatchPayload['messages'][number] {
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author, key, created: now(), namespace: 'default', topics: ['t1'], datahash: dataRefsHash(refs), ...fields }
    return { header, hash: messageHash(header), data: refs }
  }

  /** A batch sealed over its messages and data, and the pin that orders it. */
  function sealed(messages: BatchPayload['messages'], data: Data[]): { b: BatchPayload; pin: PinnedBatchRef } {
    const unsealed = { id: newId<BatchId>(), type: 'broadcast' as const, namespace: 'default', author, key, created: now(), tx: { type: 'batch_pin' as const, id: newId<TxId>() }, messages, data }
    const b: BatchPayload = { ...unsealed, hash: sealManifest(unsealed).hash }
    return { b, pin: { batchId: b.id, batchHash: b.hash, txId: b.tx.id } }
  }

  function refusal(messages: BatchPayload['messages'], data: Data[]): string | undefined {
    const { b, pin } = sealed(messages, data)
    return verifyBatch(b, pin)
  }

  it('verifies a batch of two messages, one with a value and one with a blob only, answering its manifest', () => {
    const d1 = datum('{"a":1}')
    const blobHash = 'b'.repeat(64) as Hash
    const d2: Data = { ...datum('0'), value: null, hash: dataHash({ blobHash }), blob: { hash: blobHash, size: 3, name: 'f.bin' } }
    const { b, pin } = sealed([message([ref(d1)]), message([ref(d2)])], [d1, d2])
    expect(checkBatch(b, pin)).to.deep.equal({ ok: true, manifest: sealManifest(b).manifest })
    // A data item with no namespace of its own is taken as the batch's.
    const bare = datum('2', { namespace: '' })
    expect(refusal([message([ref(bare)])], [bare])).to.equal(undefined)
  })

  it('refuses a batch that is not the one pinned: its transaction, or its own hash', () => {
    const d = datum('1')
    const { b, pin } = sealed([message([ref(d)])], [d])
    const otherTx = newId<TxId>()
    expect(verifyBatch(b, { ...pin, txId: otherTx })).to.equal(`transaction id ${b.tx.id} differs from the pinned ${otherTx}`)
    const claimed = 'c'.repeat(64) as Hash
    expect(verifyBatch({ ...b, hash: claimed }, pin)).to.equal(`manifest hash ${b.hash} differs from the batch's own hash ${claimed}`)
  })

  it('refuses an empty batch', () => {
    expect(refusal([], [])).to.equal('the batch holds no messages')
  })

  it('refuses data carried twice, in another namespace, or with neither value nor blob', () => {
    const d = datum('1')
    expect(refusal([message([ref(d)])], [d, d])).to.equal('the batch holds the same data id twice')
    const foreign = datum('1', { namespace: 'other' })
    expect(refusal([message([ref(foreign)])], [foreign])).to.equal(`data ${foreign.id} is in namespace other, the batch in default`)
    const empty: Data = { ...datum('1'), value: null }
    expect(refusal([message([ref(empty)])], [empty])).to.equal(`data ${empty.id} has neither a value nor a blob`)
  })

  it('refuses a message carried twice, of another namespace or signer, or with no topics', () => {
    const d = datum('1')
    const m = message([ref(d)])
    expect(refusal([m, m], [d])).to.equal(`message ${m.header.id} appears twice`)
    const elsewhere = message([ref(d)], { namespace: 'other' })
    expect(refusal([elsewhere], [d])).to.equal(`message ${elsewhere.header.id} is in namespace other, the batch in default`)
    const byOther = message([ref(d)], { author: 'did:firefly:org/org1' })
    expect(refusal([byOther], [d])).to.equal(`message ${byOther.header.id} is signed by did:firefly:org/org1/${key}, the batch by ${author}/${key}`)
    const otherKey = '0x' + 'bb'.repeat(20)
    const byOtherKey = message([ref(d)], { key: otherKey })
    expect(refusal([byOtherKey], [d])).to.equal(`message ${byOtherKey.header.id} is signed by ${author}/${otherKey}, the batch by ${author}/${key}`)
    const topicless = message([ref(d)], { topics: [] })
    expect(refusal([topicless], [d])).to.equal(`message ${topicless.header.id} has no topics`)
  })

  it('refuses data references that differ from what the header hashed or from the data carried', () => {
    const d = datum('1')
    const other = datum('2')
    const m = message([ref(d)])
    const swapped = { ...m, data: [ref(other)] }
    expect(refusal([swapped], [d])).to.equal(`message ${m.header.id} data refs hash to ${dataRefsHash([ref(other)])}, not ${m.header.datahash}`)
    const missing = message([ref(other)])
    expect(refusal([missing], [d])).to.equal(`message ${missing.header.id} refers to data ${other.id} that the batch does not carry`)
    const wrongHash = { id: d.id, hash: other.hash }
    const misnamed = message([wrongHash])
    expect(refusal([misnamed], [d])).to.equal(`message ${misnamed.header.id} refers to data ${d.id} with hash ${other.hash}, the batch carries ${d.hash}`)
  })
})
