import { expect } from 'chai'
import { dataRefsHash, messageHash } from '../../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../../../../node/core/ids.js'
import { now } from '../../../../../node/core/time.js'
import { MessagesRepo, type MessageRef } from '../../../../../node/db/repos/messages.js'
import { refKey } from '../../../../../node/db/repos/ref-key.js'
import { alsoIn, IN_LIST } from '../../../../../node/db/in-list.js'
import type { Header, Message } from '../../../../../node/model/index.js'
import { forEachEngine, freshReposEachTest, type Repos } from '../../../../support/repos.js'

/**
 * The repository keeps settled messages (confirmed or rejected, in a batch) in memory for byRefs, the read of event
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
  async function stored(m: Message): Promise<MessageRef> {
    await r.db.transaction((tx) => r.messages.insert(tx, m, true))
    return { id: m.header.id, hash: m.hash }
  }
  /** The message `ref` names, as an event delivery reads it. */
  const read = (ref: MessageRef, repo = r.messages): Message | undefined => repo.byRefs([ref]).get(refKey(ref))
  const refOf = (m: Message): MessageRef => ({ id: m.header.id, hash: m.hash })
  const batch = newId<BatchId>()
  const txId = newId<TxId>()

  it('answers a confirmed message from memory, the same object each time, until a statement changes its row', async () => {
    const id = await stored(message())
    const pending = read(id)!
    expect(pending.state).to.equal('ready')
    // Not settled: read again, a new object.
    expect(read(id)).to.not.equal(pending)
    await r.db.transaction((tx) => r.messages.confirmMany(tx, [id], batch, txId, now()))
    const confirmed = read(id)!
    expect(confirmed.state).to.equal('confirmed')
    expect(read(id)).to.equal(confirmed)
    // Whatever changes the row next (here the batch again), the following read sees it.
    const other = newId<BatchId>()
    await r.db.transaction((tx) => r.messages.assignBatch(tx, [id], other, txId))
    expect(read(id)!.batch).to.equal(other)
  })

  it('reads a rejection made after a confirmed read, and keeps nothing read inside a transaction', async () => {
    const id = await stored(message())
    await r.db.transaction((tx) => {
      r.messages.confirmMany(tx, [id], batch, txId, now())
      expect(r.messages.byRefs([id], tx).get(refKey(id))!.state).to.equal('confirmed')
    })
    const first = read(id)!
    // Read inside a transaction: a fresh object, and the cache is not filled from it.
    await r.db.transaction((tx) => expect(r.messages.byRefs([id], tx).get(refKey(id))).to.not.equal(first))
    await r.db.transaction((tx) => r.messages.reject(tx, id, batch, txId, now(), 'bad'))
    const rejected = read(id)!
    expect([rejected.state, rejected.rejectReason]).to.deep.equal(['rejected', 'bad'])
  })

  it('keeps an unpinned message out until its batch is assigned (the one change after its confirmation)', async () => {
    // As the sender stores it: confirmed at once, its batch assigned when it is sealed.
    const id = await stored({ ...message('none'), state: 'confirmed', confirmed: now() })
    const unbatched = read(id)!
    expect(unbatched.state).to.equal('confirmed')
    expect(read(id)).to.not.equal(unbatched)
    await r.db.transaction((tx) => r.messages.assignBatch(tx, [id], batch, txId))
    const sealed = read(id)!
    expect(sealed.batch).to.equal(batch)
    expect(read(id)).to.equal(sealed)
  })

  it('remembers messages as a committed transaction left them, unless a message row changed since', async () => {
    const [a, b] = [message(), message()]
    await stored(a)
    await stored(b)
    const at = now()
    let writes = 0
    await r.db.transaction((tx) => {
      r.messages.confirmMany(tx, [refOf(a), refOf(b)], batch, txId, at)
      writes = r.messages.writes
    })
    const confirmed = (m: Message): Message => ({ ...m, state: 'confirmed', confirmed: at, batch, txid: txId })
    r.messages.remember([confirmed(a)], writes)
    const held = read(refOf(a))!
    // The object handed over is what the first read answers: no statement read it.
    expect(held).to.deep.equal(confirmed(a))
    expect(read(refOf(a))).to.equal(held)
    expect(held).to.deep.equal(readBack(refOf(a)))
    // A write to any message row after the transaction: what was handed over may be stale, so it is not kept.
    await r.db.transaction((tx) => r.messages.assignBatch(tx, [{ id: newId<MessageId>(), hash: 'f'.repeat(64) }], batch, txId))
    const late = confirmed(b)
    r.messages.remember([late], writes)
    expect(read(refOf(b))).to.not.equal(late)
  })

  /** The row as a fresh repository reads it (nothing held in memory). */
  function readBack(ref: MessageRef): Message {
    return read(ref, new MessagesRepo(r.db, 0))!
  }

  it('mixes held and read messages in one answer, and holds no more than its budget', async () => {
    const small = new MessagesRepo(r.db, 2 * 1900)
    const ids = [await stored(message()), await stored(message()), await stored(message())]
    await r.db.transaction((tx) => r.messages.confirmMany(tx, ids, batch, txId, now()))
    const all = small.byRefs(ids)
    expect([...all.keys()].sort()).to.deep.equal(ids.map(refKey).sort())
    // The budget holds two of them: the second read answers two from memory and reads the third again.
    const again = small.byRefs(ids)
    expect([...again.keys()].sort()).to.deep.equal(ids.map(refKey).sort())
    expect(ids.filter((id) => again.get(refKey(id)) === all.get(refKey(id)))).to.have.length(2)
  })
})

/**
 * Ids are chosen by senders (schema v18): a message under an id held here with other content is stored beside it, each
 * statement of the aggregator names one row by id and hash, and the id alone names the row a caller means.
 */
forEachEngine('messages sharing an id', (engine) => {
  let r: Repos
  freshReposEachTest((repos) => (r = repos), engine)
  const batch = newId<BatchId>()
  const txId = newId<TxId>()

  function message(id: MessageId, topic: string, group?: Hash): Message {
    const refs = [{ id: newId<DataId>(), hash: ('d'.repeat(63) + '2') as Hash }]
    const header: Header = { id, type: group ? 'private' : 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: now(), namespace: 'default', ...(group ? { group } : {}), topics: [topic], datahash: dataRefsHash(refs) }
    return { header, hash: messageHash(header), state: 'pending', data: refs }
  }
  const ref = (m: Message) => ({ id: m.header.id, hash: m.hash })

  it('stores both, answers each by (id, hash), and by id the confirmed one, else its own, else the smallest hash', async () => {
    const id = newId<MessageId>()
    const [first, second, third] = [message(id, 'a'), message(id, 'b'), message(id, 'c')]
    await r.db.transaction((tx) => expect(r.messages.insertMany(tx, [first, second], false)).to.equal(2))
    await r.db.transaction((tx) => expect(r.messages.insertMany(tx, [first, second], false)).to.equal(0))
    expect(r.messages.allWithId(id).map((m) => m.hash)).to.deep.equal([first.hash, second.hash])
    expect(r.messages.byRef(id, second.hash)!.header.topics).to.deep.equal(['b'])
    expect(r.messages.get(id)!.hash, 'by hash, not arrival').to.equal([first.hash, second.hash].sort()[0])
    await r.db.transaction((tx) => r.messages.insert(tx, { ...third, state: 'ready' }, true))
    expect(r.messages.get(id)!.hash, 'its own').to.equal(third.hash)
    expect(r.messages.getMany([id]).get(id)!.hash).to.equal(third.hash)
    // Confirmed by (id, hash): the other rows stay as they were.
    await r.db.transaction((tx) => r.messages.confirmMany(tx, [{ ...ref(second), pinSeq: 40 }], batch, txId, now()))
    expect(r.messages.allWithId(id).map((m) => m.state)).to.deep.equal(['pending', 'confirmed', 'ready'])
    expect(r.messages.get(id)!.hash, 'the confirmed one').to.equal(second.hash)
    // Of two confirmed, the one pinned first.
    await r.db.transaction((tx) => r.messages.confirmMany(tx, [{ ...ref(first), pinSeq: 12 }], batch, txId, now()))
    expect(r.messages.get(id)!.hash).to.equal(first.hash)
    expect(r.messages.getMany([id]).get(id)!.hash).to.equal(first.hash)
    await r.db.transaction((tx) => r.messages.reject(tx, ref(third), batch, txId, now(), 'bad data', 50))
    expect(r.messages.byRef(id, third.hash)!.rejectReason).to.equal('bad data')
    expect(r.messages.list({ namespace: 'default', limit: 10, skip: 0 }).filter((m) => m.header.id === id)).to.have.length(3)
  })

  it('records each confirmed message’s own pin, and prefers a pinned confirmed row to an unpinned one on both engines', async () => {
    const [id, other] = [newId<MessageId>(), newId<MessageId>()]
    const [unpinned, pinned, elsewhere] = [message(id, 'a'), message(id, 'b'), message(other, 'c')]
    await r.db.transaction((tx) => r.messages.insertMany(tx, [unpinned, pinned, elsewhere], false))
    // One statement, each row its own pin; the unpinned one stored first, with none.
    await r.db.transaction((tx) => r.messages.confirmMany(tx, [ref(unpinned), { ...ref(pinned), pinSeq: 900 }, { ...ref(elsewhere), pinSeq: 3 }], batch, txId, now()))
    expect(r.db.all<{ hash: string; pin_seq: number | null }>('SELECT hash, pin_seq FROM messages ORDER BY seq').map((x) => [x.hash, x.pin_seq === null ? null : Number(x.pin_seq)])).to.deep.equal([
      [unpinned.hash, null],
      [pinned.hash, 900],
      [elsewhere.hash, 3],
    ])
    expect(r.messages.get(id)!.hash, 'a pinned confirmed row before an unpinned one, whatever its sequence').to.equal(pinned.hash)
    expect(r.messages.getMany([id, other]).get(id)!.hash).to.equal(pinned.hash)
  })

  it('answers two confirmed unpinned rows of one id by hash, whichever arrived first', async () => {
    const id = newId<MessageId>()
    const [a, b] = [message(id, 'a'), message(id, 'b')].sort((x, y) => (x.hash < y.hash ? -1 : 1))
    // The larger hash arrives first, as it may on one member and not on another.
    await r.db.transaction((tx) => r.messages.insertMany(tx, [b!, a!], false))
    await r.db.transaction((tx) => r.messages.confirmMany(tx, [ref(b!), ref(a!)], batch, txId, now()))
    expect(r.messages.get(id)!.hash).to.equal(a!.hash)
    expect(r.messages.getMany([id]).get(id)!.hash).to.equal(a!.hash)
  })

  // SQLite's planner (PostgreSQL's chooses by the table's statistics).
  if (engine === 'sqljs') it('finds rows by (id, hash) through the id alone, testing each hash, not every pair of the two lists', () => {
    const sql = `SELECT id FROM messages WHERE id ${IN_LIST} AND ${alsoIn('hash')}`
    const plan = r.db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, ['[]', '[]']).map((x) => x.detail)
    expect(plan[0]).to.match(/^SEARCH messages USING (COVERING )?INDEX sqlite_autoindex_messages_1 \(id=\?\)$/)
  })

})
