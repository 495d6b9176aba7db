import { expect } from 'chai'
import { dataHash, dataRefsHash, messageHash } from '../../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../../../../node/core/ids.js'
import { now } from '../../../../../node/core/time.js'
import type { Data, Header, Message } from '../../../../../node/model/index.js'
import { forEachEngine, freshReposEachTest, withDigest, type Repos } from '../../../../support/repos.js'

/**
 * Received data items are stored per (id, hash, digest) (schemas v18, v19): a peer may send one under an id held here
 * with other content, or with the same value and other carried fields. Received messages name their data by all three,
 * this member's own messages by id and hash (its own items, one per id); the id alone names this member's own, else
 * the one of smallest hash, then digest.
 */
forEachEngine('data items sharing an id', (engine) => {
  let r: Repos
  freshReposEachTest((repos) => (r = repos), engine)

  function item(id: DataId, value: string): Data {
    return { id, validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: value }), created: now(), value }
  }
  function carrying(d: Data): Message {
    const refs = [{ id: d.id, hash: d.hash }]
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: now(), namespace: 'default', topics: ['t'], datahash: dataRefsHash(refs) }
    return { header, hash: messageHash(header), state: 'pending', data: refs }
  }

  it('keeps both, reads each by its reference, counts and deletes one without the other', async () => {
    const id = newId<DataId>()
    const [first, second] = [item(id, '{"pay":10}'), item(id, '{"pay":10000}')]
    await r.db.transaction((tx) => expect(r.data.insertMany(tx, [first, second, first], false)).to.equal(2))
    expect(r.data.getMany([second, first]).map((d) => d.value)).to.deep.equal([second.value, first.value])
    expect(r.data.byRef({ id, hash: second.hash })!.value).to.equal(second.value)
    expect(r.data.valueBytes([first, second, second])).to.equal(10 + 13 + 13)
    const smaller = [first.hash, second.hash].sort()[0]
    expect(r.data.get(id)!.hash, 'two peers’: the smaller hash, whichever was stored first').to.equal(smaller)
    const m = carrying(second)
    await r.db.transaction((tx) => {
      r.messages.insert(tx, m, false)
      r.messages.confirmMany(tx, [{ id: m.header.id, hash: m.hash, pinSeq: 3 }], newId<BatchId>(), newId<TxId>(), now())
    })
    expect(r.data.get(id)!.hash, 'a message confirmed does not change it').to.equal(smaller)
    expect(r.data.messageWith('default', first)).to.equal(undefined)
    expect(r.data.messageWith('default', second)).to.equal(m.header.id)
    await r.db.transaction((tx) => r.data.delete(tx, r.data.byRef(first)!))
    expect(r.data.getMany([first, second]).map((d) => d.hash)).to.deep.equal([second.hash])
    // A received row stays as its batch carried it: only this member's own items record a publication.
    await r.db.transaction((tx) => r.data.setPublic(tx, second, 'QmSecond'))
    expect(r.data.get(id)!.public).to.equal(undefined)
  })

  it('an own item is named only by a reference without a digest: a received message naming its copy does not hold it', async () => {
    const own = item(newId<DataId>(), '{"own":1}')
    const copy = withDigest({ ...own, validator: 'none' })
    const peers = { ...carrying(copy), data: [{ id: copy.id, hash: copy.hash, digest: copy.digest! }] }
    await r.db.transaction((tx) => {
      r.data.insert(tx, own, true)
      r.data.insert(tx, copy, false)
      r.messages.insert(tx, peers, false)
    })
    expect(r.data.messageWith('default', { id: own.id, hash: own.hash }), 'the own item: no message of its own names it').to.equal(undefined)
    expect(r.data.messageWith('default', copy)).to.equal(peers.header.id)
    const mine = carrying(own)
    await r.db.transaction((tx) => r.messages.insert(tx, mine, true))
    expect(r.data.messageWith('default', { id: own.id, hash: own.hash })).to.equal(mine.header.id)
    expect(r.data.messageWith('other', { id: own.id, hash: own.hash }), 'another namespace').to.equal(undefined)
  })

  it('answers this member’s own data item by id, never a peer’s copy under it; one own row per id', async () => {
    const id = newId<DataId>()
    const [peers, own, second] = ['peer', 'own', 'again'].map((v): Data => ({ id, validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: `"${v}"` }), created: now(), value: `"${v}"` }))
    await r.db.transaction((tx) => r.data.insert(tx, peers!, false))
    expect(r.data.own(id), 'only a peer’s').to.equal(undefined)
    await r.db.transaction((tx) => r.data.insert(tx, own!, true))
    expect(r.data.own(id)!.value).to.equal(own!.value)
    expect(r.data.get(id)!.hash, 'its own before a peer’s').to.equal(own!.hash)
    // Its own carried back in a peer's batch stays its own; the peer's copy is a received row of its own.
    await r.db.transaction((tx) => r.data.insert(tx, own!, false))
    expect(r.data.own(id)!.hash).to.equal(own!.hash)
    expect(r.data.own(id)!.digest, 'an own row has no digest').to.equal(undefined)
    expect(r.data.byRef(withDigest(own!))!.digest).to.equal(withDigest(own!).digest)
    expect(await r.db.transaction((tx) => r.data.insertMany(tx, [second!], true)), 'one own row per id').to.equal(0)
    expect(r.data.own(id)!.hash).to.equal(own!.hash)
  })

  it('keeps copies of one (id, hash) apart by the digest of their carried fields, each read by its reference', async () => {
    const honest = withDigest(item(newId<DataId>(), '{"pay":10}'))
    const hostile = withDigest({ ...honest, datatype: { name: 'nosuch', version: '1' } })
    expect(hostile.hash).to.equal(honest.hash)
    expect(hostile.digest).to.not.equal(honest.digest)
    // Whichever arrives first, each is a row of its own; the same one again is stored once.
    await r.db.transaction((tx) => expect(r.data.insertMany(tx, [hostile, honest, hostile], false)).to.equal(2))
    const read = (d: Data) => r.data.byRef({ id: d.id, hash: d.hash, digest: d.digest! })
    expect(read(honest)!.datatype).to.equal(undefined)
    expect(read(hostile)!.datatype).to.deep.equal({ name: 'nosuch', version: '1' })
    expect(r.data.getMany([hostile, honest]).map((d) => d.digest)).to.deep.equal([hostile.digest, honest.digest])
    // By id alone, or by id and hash without a digest: the smaller digest, on every member holding the two.
    const smaller = [honest.digest!, hostile.digest!].sort()[0]
    expect(r.data.get(honest.id)!.digest).to.equal(smaller)
    expect(r.data.byRef({ id: honest.id, hash: honest.hash })!.digest).to.equal(smaller)
    expect(r.data.toSend(honest.id), 'which one a send means cannot be told').to.equal(undefined)
    expect(r.data.valueBytes([honest, hostile])).to.equal(20)
    // A message carrying one names it by its digest; deleting the other leaves it.
    const m = carrying(honest)
    const refs = [{ id: honest.id, hash: honest.hash, digest: honest.digest! }]
    await r.db.transaction((tx) => r.messages.insert(tx, { ...m, data: refs }, false))
    expect(r.messages.byRef(m.header.id, m.hash)!.data).to.deep.equal(refs)
    expect(r.data.messageWith('default', refs[0]!)).to.equal(m.header.id)
    expect(r.data.messageWith('default', { id: hostile.id, hash: hostile.hash, digest: hostile.digest! })).to.equal(undefined)
    await r.db.transaction((tx) => r.data.delete(tx, read(hostile)!))
    expect(read(hostile)).to.equal(undefined)
    expect(read(honest)!.value).to.equal(honest.value)
  })

  for (const more of [0, 10]) {
    it(`deletes at once the received items no message names nor a further batch carried, whatever else shares their strings (${more} more named)`, async () => {
      const received = (n: number) => withDigest(item(newId<DataId>(), `{"n":${n}}`))
      const [named, carried, unnamed, other] = [received(1), received(2), received(3), received(4)]
      // Past a few digests, the rows are read another way (INSTR_DIGESTS): the same answer.
      const extra = Array.from({ length: more }, (_, i) => received(10 + i))
      const ref = (d: Data) => ({ id: d.id, hash: d.hash, digest: d.digest! })
      const m = carrying(named)
      // `unnamed`'s id, hash and digest all appear in this message's list, but in no one reference of it: it names no such item.
      const mixed = { ...carrying(other), data: [ref(other), { id: unnamed.id, hash: other.hash, digest: other.digest! }, { id: other.id, hash: unnamed.hash, digest: unnamed.digest! }] }
      await r.db.transaction((tx) => {
        r.data.insertMany(tx, [named, carried, unnamed, other, ...extra], false)
        r.messages.insert(tx, { ...m, data: [ref(named)] }, false)
        r.messages.insert(tx, mixed, false)
        // Half of them named by messages, half only by what further batches carried.
        for (const d of extra.slice(0, more / 2)) r.messages.insert(tx, { ...carrying(d), data: [ref(d)] }, false)
        const records = [carried, ...extra.slice(more / 2)].map((d) => ({ batchId: newId<BatchId>(), batchHash: named.hash, id: m.header.id, hash: m.hash, carried: { data: [ref(d)] } }))
        r.messages.carried.insertMany(tx, records)
      })
      const deleted = await r.db.transaction((tx) => r.data.deleteUnnamed(tx, [ref(named), ref(carried), ref(unnamed), ref(unnamed), { id: other.id, hash: other.hash }, ...extra.map(ref)]))
      expect(deleted.map((d) => d.data.id)).to.deep.equal([unnamed.id])
      expect([named, carried, unnamed, other, ...extra].filter((d) => r.data.byRef(ref(d)) === undefined)).to.deep.equal([unnamed])
    })
  }

  it('lists this member’s own item once when a peer’s batch carries it back, one index probe per row', async () => {
    const own = item(newId<DataId>(), '{"mine":1}')
    const peers = item(newId<DataId>(), '{"theirs":1}')
    await r.db.transaction((tx) => r.data.insert(tx, own, true))
    // Carried back with the same fields, and once more with others: received rows of the same id and hash.
    await r.db.transaction((tx) => r.data.insertMany(tx, [withDigest(own), withDigest({ ...own, validator: 'none' }), withDigest(peers)], false))
    const listed = r.data.list('default', { limit: 100, skip: 0 })
    expect(listed.map((d) => [d.id, d.digest])).to.deep.equal([
      [peers.id, withDigest(peers).digest],
      [own.id, undefined],
    ])
    expect(r.data.listValueBytes('default', { limit: 100, skip: 0 })).to.deep.equal({ items: 2, bytes: own.value!.length + peers.value!.length })
    if (engine === 'sqljs') {
      const plan = r.db
        .all<{ detail: string }>(`EXPLAIN QUERY PLAN SELECT * FROM data WHERE namespace = ? AND (local = 1 OR NOT EXISTS (SELECT 1 FROM data o WHERE o.local = 1 AND o.id = data.id AND o.hash = data.hash)) ORDER BY seq DESC LIMIT ? OFFSET ?`, ['default', 10, 0])
        .map((x) => x.detail)
      // The page by data_namespace, each received row's probe for an own twin by an index on its id.
      expect(plan[0]).to.equal('SEARCH data USING INDEX data_namespace (namespace=?)')
      expect(plan.join(' | ')).to.match(/SEARCH o USING (COVERING )?INDEX \w+ \(id=\?/).and.not.to.contain('SCAN')
    }
  })

  it('counts a blob as used while any data item refers to it, whatever id it shares with another', async () => {
    const id = newId<DataId>()
    const blob = { hash: 'b'.repeat(64) as Hash, size: 3, name: 'b.bin' }
    const [first, second] = ['one', 'two'].map((v): Data => ({ id, validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: `"${v}"`, blobHash: blob.hash }), created: now(), value: `"${v}"`, blob }))
    await r.db.transaction((tx) => r.data.insertMany(tx, [first!, second!], false))
    expect(await r.db.transaction((tx) => r.data.delete(tx, r.data.byRef(first!)!))).to.deep.equal({ blobStillUsed: true })
    expect(await r.db.transaction((tx) => r.data.delete(tx, r.data.byRef(second!)!))).to.deep.equal({ blobStillUsed: false })
  })
})
