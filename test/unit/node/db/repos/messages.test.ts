import { expect } from 'chai'
import { dataRefsHash, messageHash } from '../../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../../../../node/core/ids.js'
import { now } from '../../../../../node/core/time.js'
import { MessagesRepo } from '../../../../../node/db/repos/messages.js'
import type { Header, Message } from '../../../../../node/model/index.js'
import { forEachEngine, freshReposEachTest, type Repos } from '../../../../support/repos.js'

/**
 * The repository keeps settled messages (confirmed or rejected, in a batch) in memory for getMany, the read of event
 * deliveries: the same object comes back, and every statement that changes a row makes the next read see it.
 */
forEachEngine('settled messages in memory', (engine) => {
  let r: Repos
  freshReposEachTest((repos) => (r = repos), engine)

  function message(txtype: Header['txtype'] = 'batch_pin'): Message {
    const refs = [{ id: newId<DataId>(), hash: ('d'.repeat(63) + '1') as Hash }]
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype, author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: now(), namespace: 'default', topics: ['t'], datahash: dataRefsHash(refs) }
    return { header, hash: messageHash(header), state: 'ready', data: refs }
  }
  async function stored(m: Message): Promise<MessageId> {
    await r.db.transaction((tx) => r.messages.insert(tx, m, true))
    return m.header.id
  }
  const batch = newId<BatchId>()
  const txId = newId<TxId>()

  it('answers a confirmed message from memory, the same object each time, until a statement changes its row', async () => {
    const id = await stored(message())
    const pending = r.messages.getMany([id]).get(id)!
    expect(pending.state).to.equal('ready')
    // Not settled: read again, a new object.
    expect(r.messages.getMany([id]).get(id)).to.not.equal(pending)
    await r.db.transaction((tx) => r.messages.confirmMany(tx, [id], batch, txId, now()))
    const confirmed = r.messages.getMany([id]).get(id)!
    expect(confirmed.state).to.equal('confirmed')
    expect(r.messages.getMany([id]).get(id)).to.equal(confirmed)
    // Whatever changes the row next (here the batch again), the following read sees it.
    const other = newId<BatchId>()
    await r.db.transaction((tx) => r.messages.assignBatch(tx, [id], other, txId))
    expect(r.messages.getMany([id]).get(id)!.batch).to.equal(other)
  })

  it('reads a rejection made after a confirmed read, and keeps nothing read inside a transaction', async () => {
    const id = await stored(message())
    await r.db.transaction((tx) => {
      r.messages.confirmMany(tx, [id], batch, txId, now())
      expect(r.messages.getMany([id], tx).get(id)!.state).to.equal('confirmed')
    })
    const first = r.messages.getMany([id]).get(id)!
    // Read inside a transaction: a fresh object, and the cache is not filled from it.
    await r.db.transaction((tx) => expect(r.messages.getMany([id], tx).get(id)).to.not.equal(first))
    await r.db.transaction((tx) => r.messages.reject(tx, id, batch, txId, now(), 'bad'))
    const rejected = r.messages.getMany([id]).get(id)!
    expect([rejected.state, rejected.rejectReason]).to.deep.equal(['rejected', 'bad'])
  })

  it('keeps an unpinned message out until its batch is assigned (the one change after its confirmation)', async () => {
    // As the sender stores it: confirmed at once, its batch assigned when it is sealed.
    const id = await stored({ ...message('none'), state: 'confirmed', confirmed: now() })
    const unbatched = r.messages.getMany([id]).get(id)!
    expect(unbatched.state).to.equal('confirmed')
    expect(r.messages.getMany([id]).get(id)).to.not.equal(unbatched)
    await r.db.transaction((tx) => r.messages.assignBatch(tx, [id], batch, txId))
    const sealed = r.messages.getMany([id]).get(id)!
    expect(sealed.batch).to.equal(batch)
    expect(r.messages.getMany([id]).get(id)).to.equal(sealed)
  })

  it('remembers messages as a committed transaction left them, unless a message row changed since', async () => {
    const [a, b] = [message(), message()]
    await stored(a)
    await stored(b)
    const at = now()
    let writes = 0
    await r.db.transaction((tx) => {
      r.messages.confirmMany(tx, [a.header.id, b.header.id], batch, txId, at)
      writes = r.messages.writes
    })
    const confirmed = (m: Message): Message => ({ ...m, state: 'confirmed', confirmed: at, batch, txid: txId })
    r.messages.remember([confirmed(a)], writes)
    const held = r.messages.getMany([a.header.id]).get(a.header.id)!
    // The object handed over is what the first read answers: no statement read it.
    expect(held).to.deep.equal(confirmed(a))
    expect(r.messages.getMany([a.header.id]).get(a.header.id)).to.equal(held)
    expect(held).to.deep.equal(await readBack(a.header.id))
    // A write to any message row after the transaction: what was handed over may be stale, so it is not kept.
    await r.db.transaction((tx) => r.messages.assignBatch(tx, [newId<MessageId>()], batch, txId))
    const late = confirmed(b)
    r.messages.remember([late], writes)
    expect(r.messages.getMany([b.header.id]).get(b.header.id)).to.not.equal(late)
  })

  /** The row as a fresh repository reads it (nothing held in memory). */
  async function readBack(id: MessageId): Promise<Message> {
    return new MessagesRepo(r.db, 0).getMany([id]).get(id)!
  }

  it('mixes held and read messages in one answer, and holds no more than its budget', async () => {
    const small = new MessagesRepo(r.db, 2 * 1900)
    const ids = [await stored(message()), await stored(message()), await stored(message())]
    await r.db.transaction((tx) => r.messages.confirmMany(tx, ids, batch, txId, now()))
    const all = small.getMany(ids)
    expect([...all.keys()].sort()).to.deep.equal([...ids].sort())
    // The budget holds two of them: the second read answers two from memory and reads the third again.
    const again = small.getMany(ids)
    expect([...again.keys()].sort()).to.deep.equal([...ids].sort())
    expect(ids.filter((id) => again.get(id) === all.get(id))).to.have.length(2)
  })
})
