import { expect } from 'chai'
import { dataDigest, dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { newId, type DataId, type Hash, type MessageId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { carriedFields, type Data, type DataRef, type Header, type Message } from '../../../../node/model/index.js'
import { refKey } from '../../../../node/db/repos/ref-key.js'
import { withDigest } from '../../../support/repos.js'
import { dataDigests } from '../../../../node/data/digests.js'

/** What `fetchdigests` answers for a message's data: the digest of what its batch carried, own items' computed alike. */
describe('data digests of a page of messages', () => {
  const blob = { hash: 'b'.repeat(64) as Hash, size: 3, name: 'a.bin', public: 'QmPublished' }
  const item = (over: Partial<Data> = {}): Data => ({ id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: '1' }), created: now(), value: '1', ...over })
  function message(type: 'broadcast' | 'private', refs: DataRef[]): Message {
    const header: Header = { id: newId<MessageId>(), type, txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: now(), namespace: 'default', topics: ['T'], datahash: dataRefsHash(refs) }
    return { header, hash: messageHash(header), state: 'confirmed', data: refs }
  }
  const held = (rows: Data[]) => {
    const reads: number[] = []
    const byRefs = (refs: readonly DataRef[]): Map<string, Data> => {
      reads.push(refs.length)
      const out = new Map<string, Data>()
      for (const r of refs) {
        const d = rows.find((x) => x.id === r.id && x.hash === r.hash && x.digest === r.digest)
        if (d) out.set(refKey(r), d)
      }
      return out
    }
    return { byRefs, reads }
  }

  it('gives an own item the digest a receiver stored, in one read for the page, and none for an item not held', () => {
    const own = item({ datatype: { name: 'order', version: '1' }, blob })
    const received = withDigest(item())
    const missing = item()
    const m1 = message('broadcast', [{ id: own.id, hash: own.hash }])
    const m2 = message('broadcast', [{ id: received.id, hash: received.hash, digest: received.digest! }, { id: missing.id, hash: missing.hash }])
    const { byRefs, reads } = held([own, received])
    const out = dataDigests([m1, m2], byRefs)
    expect(reads).to.deep.equal([3])
    expect(out.get(m1)).to.deep.equal([{ id: own.id, hash: own.hash, digest: withDigest(own).digest }])
    expect(out.get(m2)).to.deep.equal([{ id: received.id, hash: received.hash, digest: received.digest }, { id: missing.id, hash: missing.hash }])
  })

  it('leaves a private message’s blob reference out: published later here, carried without', () => {
    const own = item({ blob })
    const m = message('private', [{ id: own.id, hash: own.hash }])
    const { blobPublic: _published, ...rest } = carriedFields(own)
    const [d] = dataDigests([m], held([own]).byRefs).get(m)!
    expect(d!.digest).to.equal(dataDigest({ ...rest, blobPublic: null }))
    const receivedCopy = withDigest(item({ id: own.id, created: own.created, blob: { hash: blob.hash, size: blob.size, name: blob.name } }))
    const there = message('private', [{ id: own.id, hash: own.hash, digest: receivedCopy.digest! }])
    expect(dataDigests([there], held([receivedCopy]).byRefs).get(there)![0]!.digest, 'the receiver computes the same').to.equal(d!.digest)
  })
})
