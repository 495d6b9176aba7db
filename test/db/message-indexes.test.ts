import { expect } from 'chai'
import { dataRefsHash, messageHash } from '../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import type { Header, Message } from '../../node/model/index.js'
import { forEachEngine, freshReposEachTest, type Repos } from '../support/repos.js'

const GROUP = 'e'.repeat(64) as Hash

function message(extra: Partial<Header> = {}): Message {
  const refs = [{ id: newId<DataId>(), hash: ('d'.repeat(63) + '1') as Hash }]
  const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: now(), namespace: 'default', topics: ['t'], datahash: dataRefsHash(refs), ...extra }
  return { header, hash: messageHash(header), state: 'ready', data: refs }
}

/**
 * Schema v12: the unbatched messages (this member's, no batch yet) and the messages of groups are in partial indexes;
 * what reads them still finds exactly them, through those indexes.
 */
forEachEngine('db: the partial indexes of messages', (engine) => {
  let r: Repos
  freshReposEachTest((repos) => (r = repos), engine)

  // SQLite's plans; PostgreSQL plans by its statistics, so there only what the reads find is checked.
  const plan = (sql: string, params: unknown[]): string =>
    r.db
      .all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params as never)
      .map((p) => p.detail)
      .join(' | ')

  it('finds this member’s unbatched messages, and no received or sealed one, through messages_unbatched', async () => {
    const mine = message()
    const sealed = message()
    const received = message()
    await r.db.transaction((tx) => {
      r.messages.insertMany(tx, [mine, sealed], true)
      r.messages.insertMany(tx, [received], false)
      r.messages.assignBatch(tx, [{ id: sealed.header.id, hash: sealed.hash }], newId<BatchId>(), newId<TxId>())
    })
    expect(r.messages.unbatched().map((m) => m.header.id)).to.deep.equal([mine.header.id])
    await r.db.transaction((tx) => r.messages.assignBatch(tx, [{ id: mine.header.id, hash: mine.hash }], newId<BatchId>(), newId<TxId>()))
    expect(r.messages.unbatched()).to.deep.equal([])
    const sql = "SELECT * FROM messages WHERE local = 1 AND batch_id IS NULL AND (state = 'ready' OR (state = 'confirmed' AND txtype = 'none')) ORDER BY seq"
    if (engine === 'sqljs') expect(plan(sql, [])).to.equal('SCAN messages USING INDEX messages_unbatched')
    // The index holds only those rows: no received message and no sealed one is in it.
    expect(r.db.get<{ n: number }>('SELECT count(*) AS n FROM messages INDEXED BY messages_unbatched WHERE local = 1 AND batch_id IS NULL')!.n).to.equal(0)
  })

  it('finds a group’s messages through messages_group_type, which broadcasts stay out of', async () => {
    const init = message({ type: 'groupinit', group: GROUP, tag: 'ff_define_group' })
    const priv = { ...message({ type: 'private', group: GROUP }), pins: [`${'f'.repeat(64)}:0`] }
    await r.db.transaction((tx) => r.messages.insertMany(tx, [message(), init, priv, message()], false))
    expect(r.messages.groupinitOf(GROUP)!.header.id).to.equal(init.header.id)
    expect(r.messages.withPin(GROUP, 'f'.repeat(64) as Hash)!.header.id).to.equal(priv.header.id)
    if (engine === 'sqljs') expect(plan("SELECT * FROM messages WHERE grp = ? AND type = 'groupinit' LIMIT 1", [GROUP])).to.equal('SEARCH messages USING INDEX messages_group_type (grp=? AND type=?)')
    if (engine === 'sqljs') expect(plan("SELECT * FROM messages WHERE grp = ? AND type IN ('private', 'groupinit') AND pins LIKE ? LIMIT 1", [GROUP, '%x%'])).to.equal(
      'SEARCH messages USING INDEX messages_group_type (grp=? AND type=?)',
    )
    expect(r.db.get<{ n: number }>('SELECT count(*) AS n FROM messages INDEXED BY messages_group_type WHERE grp IS NOT NULL')!.n).to.equal(2)
  })
})
