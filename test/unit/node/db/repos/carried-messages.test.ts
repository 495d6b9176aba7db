import { expect } from 'chai'
import { dataHash, dataRefsHash, messageHash } from '../../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId } from '../../../../../node/core/ids.js'
import { now } from '../../../../../node/core/time.js'
import { sameCarried, type CarriedMessage } from '../../../../../node/db/repos/carried-messages.js'
import type { DataRef, Header, Message } from '../../../../../node/model/index.js'
import { forEachEngine, freshReposEachTest, type Repos } from '../../../../support/repos.js'

const digest = (c: string) => c.repeat(64) as Hash

/**
 * Schema v20: what a further batch of a message's author carried with it (data references with their digests, pins),
 * recorded beside the message row, read per batch, and taken into the row by the batch that decides it.
 */
forEachEngine('carried messages', (engine) => {
  let r: Repos
  freshReposEachTest((repos) => (r = repos), engine)

  function received(refs: DataRef[], pins?: string[]): Message {
    const header: Header = { id: newId<MessageId>(), type: 'private', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: now(), namespace: 'default', topics: ['t'], datahash: dataRefsHash(refs), group: digest('e') }
    return { header, hash: messageHash(header), state: 'pending', data: refs, ...(pins ? { pins } : {}), batch: newId<BatchId>() }
  }

  it('records what each further batch carried, reads it per batch, and the row takes the deciding batch’s', async () => {
    const ref = { id: newId<DataId>(), hash: dataHash({ valueRaw: '1' }) }
    const m = received([{ ...ref, digest: digest('a') }], [`${digest('f')}:0`])
    const [b2, b3] = [newId<BatchId>(), newId<BatchId>()]
    const of = (batchId: string, d: string, pins?: string[]): CarriedMessage => ({ batchId, batchHash: digest('b'), id: m.header.id, hash: m.hash, carried: { data: [{ ...ref, digest: digest(d) }], ...(pins ? { pins } : {}) } })
    await r.db.transaction((tx) => {
      r.messages.insert(tx, m, false)
      r.messages.carried.insertMany(tx, [of(b2, 'c', [`${digest('9')}:1`]), of(b3, 'd')])
      // Recorded once: a batch stored again changes nothing.
      r.messages.carried.insertMany(tx, [of(b2, 'e')])
    })
    expect(r.messages.carried.ofBatch(b2, digest('b')).get(m.header.id)).to.deep.equal(of(b2, 'c', [`${digest('9')}:1`]))
    expect(r.messages.carried.ofBatch(b2, digest('c')).size, 'another batch under the id').to.equal(0)
    expect(r.data.messageWith('default', { ...ref, digest: digest('d') }), 'an item only a further batch carried stays').to.equal(m.header.id)
    expect(r.data.messageWith('default', { ...ref, digest: digest('0') })).to.equal(undefined)
    expect(r.data.messageWith('other', { ...ref, digest: digest('d') }), 'a record of a message of another namespace').to.equal(undefined)
    await r.db.transaction((tx) => {
      // Another batch than b2, the same one on every read.
      const others = r.messages.carried.others(tx, [{ id: m.header.id, hash: m.hash }, { id: m.header.id, hash: digest('7') }], b2, digest('b'))
      expect([...others.values()].map((c) => c.batchId)).to.deep.equal([b3])
      r.messages.takeCarried(tx, { id: m.header.id, hash: m.hash }, of(b2, 'c', [`${digest('9')}:1`]).carried, b2)
      r.messages.carried.deleteOfBatch(tx, b2, digest('b'), m.header.id)
    })
    const row = r.messages.byRef(m.header.id, m.hash)!
    expect([row.batch, row.data, row.pins]).to.deep.equal([b2, [{ ...ref, digest: digest('c') }], [`${digest('9')}:1`]])
    expect(r.messages.carried.ofBatch(b2, digest('b')).size).to.equal(0)
    await r.db.transaction((tx) => r.messages.carried.deleteOfBatch(tx, b3, digest('b')))
    expect(r.messages.carried.ofBatch(b3, digest('b')).size).to.equal(0)
  })

  it('tells the same carried contents from others: data by id, hash and digest, and pins', () => {
    const d = { id: newId<DataId>(), hash: digest('1'), digest: digest('a') }
    expect(sameCarried({ data: [d] }, { data: [{ ...d }] })).to.equal(true)
    expect(sameCarried({ data: [d] }, { data: [{ ...d, digest: digest('b') }] })).to.equal(false)
    expect(sameCarried({ data: [d] }, { data: [{ id: d.id, hash: d.hash }] }), 'an own reference has no digest').to.equal(false)
    expect(sameCarried({ data: [d], pins: ['x:0'] }, { data: [d], pins: ['x:1'] })).to.equal(false)
    expect(sameCarried({ data: [d], pins: ['x:0'] }, { data: [d] })).to.equal(false)
    expect(sameCarried({ data: [d, d] }, { data: [d] })).to.equal(false)
  })
})
