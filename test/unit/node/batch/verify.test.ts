import { expect } from 'chai'
import { genericBatchManifest } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import type { BatchPayload, Header } from '../../../../node/model/index.js'

/**
 * A batch's manifest, which every seal and every verification hashes, is written directly by core/hashes.ts: it must
 * be the text its goJson definition writes, also for ids that definition normalises. (The header and data-ref texts
 * are held to theirs in node/core/hashes.header-json.test.ts and to FireFly's vectors in node/core/hashes.test.ts.)
 */
describe('batch verification texts', () => {
  const base: Header = {
    id: '2cd37805-5f40-4e12-962e-67868cde3049' as MessageId,
    type: 'private',
    txtype: 'batch_pin',
    author: '0x12345',
    key: '0xabc',
    created: '2021-05-04T04:55:03.123456789Z' as Header['created'],
    namespace: 'ns1',
    topics: ['topic1', 'topic2'],
    tag: 'tag1',
    datahash: '2468d5c26cc85968acaf8b96d09476453916ea4eab41632a31d09efc7ab297d2' as Hash,
  }

  it('writes manifests as their goJson definition does, also for ids it normalises', () => {
    const refs = [
      { id: newId<DataId>(), hash: 'a'.repeat(64) as Hash },
      { id: newId<DataId>(), hash: 'b'.repeat(64) as Hash },
    ]
    const b: Pick<BatchPayload, 'id' | 'tx' | 'messages' | 'data'> = {
      id: newId<BatchId>(),
      tx: { type: 'batch_pin', id: newId<TxId>() },
      messages: [
        { header: { ...base, id: newId<MessageId>() } as Header, hash: 'c'.repeat(64) as Hash, data: [refs[0]!] },
        { header: { ...base, id: newId<MessageId>(), topics: ['x'] } as Header, hash: 'd'.repeat(64) as Hash, data: [refs[1]!] },
      ],
      data: refs.map((r) => ({ ...r, validator: 'json', namespace: 'ns1', created: base.created!, value: '1' })) as unknown as BatchPayload['data'],
    }
    const reference = (x: typeof b) =>
      genericBatchManifest({ id: x.id, txId: x.tx.id, txType: x.tx.type, messages: x.messages.map((m) => ({ id: m.header.id, hash: m.hash, topics: m.header.topics.length })), data: x.data.map((d) => ({ id: d.id, hash: d.hash })) })
    expect(sealManifest(b).manifest).to.equal(reference(b))
    // Normalised by the reference, the same text either way.
    const upper = { ...b, id: b.id.toUpperCase() as BatchId, tx: { ...b.tx, type: 'unpinned' as const }, messages: b.messages.map((m) => ({ ...m, hash: `0x${m.hash.toUpperCase()}` as Hash })) }
    expect(sealManifest(upper).manifest).to.equal(reference(upper))
  })
})

