import { expect } from 'chai'
import { dataRefsHash, messageHash } from '../../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type EventId, type Hash, type MessageId, type TxId } from '../../../../../node/core/ids.js'
import { now, type Timestamp } from '../../../../../node/core/time.js'
import { eventListQuery } from '../../../../../node/db/repos/events.js'
import { messageListQuery } from '../../../../../node/db/repos/messages.js'
import type { Filter, FilterOp, Header, Message } from '../../../../../node/model/index.js'
import { forEachEngine, freshReposEachTest, type Repos } from '../../../../support/repos.js'

function message(topics: string[], extra: Partial<Header> = {}): Message {
  const refs = [{ id: newId<DataId>(), hash: ('d'.repeat(63) + '1') as Hash }]
  const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', key: '0x' + 'aa'.repeat(20), created: now(), namespace: 'default', topics, datahash: dataRefsHash(refs), ...extra }
  return { header, hash: messageHash(header), state: 'ready', data: refs }
}
const ref = (m: Message) => ({ id: m.header.id, hash: m.hash })

const where = (field: string, value: string, op: FilterOp = 'eq'): Filter => [[{ field, op, value, not: false, caseInsensitive: false }]]
const page = { namespace: 'default', limit: 50, skip: 0 }

/**
 * Schema v17: the messages list, filtered or not, reads its page from an index in the API's natural order instead of
 * sorting every message it matches, and a message's events are found by their reference. Each plan must name the
 * index and sort nothing; the tables are tiny, so on PostgreSQL the plan is asked for with sequential scans and sorts
 * priced out, which leaves a sort only where no index can give the order.
 */
forEachEngine('db: schema v17, the messages list in its natural order', (engine) => {
  let r: Repos
  freshReposEachTest((repos) => (r = repos), engine)

  /** The plan of `q`; on PostgreSQL with sequential scans priced out, and sorts too unless `sorts`. */
  async function plan(q: { sql: string; params: (string | number)[] }, sorts = false): Promise<string> {
    if (engine === 'sqljs') {
      return r.db
        .all<{ detail: string }>(`EXPLAIN QUERY PLAN ${q.sql}`, q.params)
        .map((p) => p.detail)
        .join(' | ')
    }
    let lines: string[] = []
    await r.db.transaction((tx) => {
      tx.run('SET LOCAL enable_seqscan = off')
      if (!sorts) tx.run('SET LOCAL enable_sort = off')
      lines = tx.all<{ 'QUERY PLAN': string }>(`EXPLAIN ${q.sql}`, q.params).map((p) => p['QUERY PLAN'])
    })
    return lines.join(' | ')
  }

  /**
   * PostgreSQL prices a lookup against the rows it counted: among a handful, reading the namespace in order costs
   * what a lookup does, so the lookups are checked among enough rows, counted.
   */
  const PLANNED_ROWS = 500
  async function analyze(): Promise<void> {
    if (engine === 'postgres') await r.db.transaction((tx) => tx.run('ANALYZE'))
  }

  /** The plan reads `index` in the list's order: nothing sorted afterwards. */
  async function readsInOrder(q: { sql: string; params: (string | number)[] }, index: string): Promise<void> {
    const p = await plan(q)
    if (engine === 'sqljs') {
      expect(p).to.match(new RegExp(`^SEARCH messages USING INDEX ${index} \\(namespace=\\?`))
      expect(p).to.not.include('TEMP B-TREE')
    } else {
      expect(p).to.include(`Index Scan Backward using ${index} on messages`)
      expect(p).to.not.match(/\bSort\b/)
    }
  }

  it('lists a topic’s messages, pending first, then the newest confirmed, through messages_topics', async () => {
    const [a1, a2, both, b, pending] = [message(['a']), message(['a']), message(['a', 'b']), message(['b']), message(['a'])]
    await r.db.transaction((tx) => r.messages.insertMany(tx, [a1, a2, both, b, pending], false))
    const [batch, txId] = [newId<BatchId>(), newId<TxId>()]
    await r.db.transaction((tx) => r.messages.confirmMany(tx, [a2, b].map(ref), batch, txId, '2026-01-01T00:00:01Z' as Timestamp))
    await r.db.transaction((tx) => r.messages.confirmMany(tx, [ref(a1)], batch, txId, '2026-01-01T00:00:02Z' as Timestamp))
    const ids = (topics: string) => r.messages.list({ ...page, filter: where('topics', topics) }).map((m) => m.header.id)
    expect(ids('a')).to.deep.equal([pending.header.id, a1.header.id, a2.header.id])
    expect(ids('a,b')).to.deep.equal([both.header.id])
    await readsInOrder(messageListQuery({ ...page, filter: where('topics', 'a') }), 'messages_topics')
    await readsInOrder(messageListQuery({ ...page, pending: true, filter: where('topics', 'a') }), 'messages_topics')
  })

  it('lists every message, or those of a tag, type, state or confirmed range, through messages_natural', async () => {
    for (const filter of [undefined, where('tag', 't'), where('type', 'broadcast'), where('state', 'confirmed'), where('confirmed', '2026-01-01T00:00:00Z', 'gte')]) {
      await readsInOrder(messageListQuery({ ...page, ...(filter ? { filter } : {}) }), 'messages_natural')
    }
  })

  it('lists the replies to a message and the messages of a group through messages_cid and messages_group', async () => {
    const first = message(['a'])
    const reply = message(['a'], { cid: first.header.id })
    const group = 'e'.repeat(64) as Hash
    const [older, newer] = [message(['a'], { type: 'private', group }), message(['a'], { type: 'private', group })]
    const rest = Array.from({ length: PLANNED_ROWS }, () => message(['a']))
    await r.db.transaction((tx) => r.messages.insertMany(tx, [first, reply, older, newer, ...rest], false))
    await r.db.transaction((tx) => r.messages.confirmMany(tx, [ref(older)], newId<BatchId>(), newId<TxId>(), now()))
    await analyze()
    const replies = { ...page, filter: where('cid', first.header.id) }
    const ofGroup = { ...page, filter: where('group', group) }
    expect(r.messages.list(replies).map((m) => m.header.id)).to.deep.equal([reply.header.id])
    expect(r.messages.list(ofGroup).map((m) => m.header.id)).to.deep.equal([newer.header.id, older.header.id])
    await readsInOrder(messageListQuery(replies), 'messages_cid')
    await readsInOrder(messageListQuery(ofGroup), 'messages_group')
  })

  it('finds a message’s events through events_reference', async () => {
    const ref = newId<MessageId>()
    const others = Array.from({ length: PLANNED_ROWS }, () => ({ type: 'message_confirmed' as const, namespace: 'default', reference: newId<MessageId>() }))
    const [ev] = await r.db.transaction((tx) => r.events.insertMany(tx, [{ type: 'message_confirmed', namespace: 'default', reference: ref }, ...others], now()))
    await analyze()
    expect(r.events.list({ ...page, reference: ref }).map((e) => e.id)).to.deep.equal([ev!.id as EventId])
    const p = await plan(eventListQuery({ ...page, reference: ref }), true)
    expect(p).to.match(engine === 'sqljs' ? /^SEARCH events USING INDEX events_reference \(reference=\?\)$/ : /Index Scan (Backward )?using events_reference on events/)
  })
})
