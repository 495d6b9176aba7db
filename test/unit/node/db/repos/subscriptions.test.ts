import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../../support/db/helpers.js'
import { Database } from '../../../../../node/db/database.js'
import { migrations } from '../../../../../node/db/schema/index.js'
import { SubscriptionsRepo } from '../../../../../node/db/repos/subscriptions.js'
import { ParleyError } from '../../../../../node/core/errors.js'
import { newId, type SubscriptionId } from '../../../../../node/core/ids.js'
import type { Timestamp } from '../../../../../node/core/time.js'
import type { FilterCondition, FilterOp, Subscription } from '../../../../../node/model/index.js'
import { snapshotInThread } from '../../../../support/repos.js'

const cond = (field: string, op: FilterOp, value: string): FilterCondition => ({ field, op, value, not: false, caseInsensitive: false })
const page = { limit: 25, skip: 0 }

function sub(namespace: string, name: string, created: string, extra: Partial<Subscription> = {}): Subscription {
  return { id: newId<SubscriptionId>(), namespace, name, transport: 'websockets', filter: {}, options: { firstEvent: '-1' }, created: created as Timestamp, ...extra }
}

describe('subscriptions: storage', () => {
  const temp = new TempDirs()
  let dir: string
  let db: Database
  let repo: SubscriptionsRepo

  beforeEach(async () => {
    dir = join(await temp.make('parley-subs-db-'), 'db')
    db = await Database.open({ dir, migrations, buildSnapshot: snapshotInThread })
    repo = new SubscriptionsRepo(db)
  })
  afterEach(() => db.close())
  after(() => temp.cleanup())

  const a = sub('default', 'a', '2024-01-01T00:00:01Z', { filter: { events: 'message_confirmed', message: { tag: '^t' } }, options: { firstEvent: '12', readAhead: 5 } })
  const b = sub('default', 'b', '2024-01-01T00:00:02.5Z', { filter: { topic: 'x' } })
  const c = sub('default', 'c', '2024-01-01T00:00:03Z', { updated: '2024-02-01T00:00:00Z' as Timestamp })
  const other = sub('other', 'a', '2024-01-01T00:00:04Z')
  const insertAll = () =>
    db.transaction((tx) => {
      repo.insert(tx, a, 12)
      repo.insert(tx, b, 0)
      repo.insert(tx, c, 3)
      repo.insert(tx, other, 7)
    })

  it('stores a subscription and reads it back by id and by name, only in its namespace', async () => {
    await insertAll()
    expect(repo.byId('default', a.id)).to.deep.equal(a)
    expect(repo.byName('default', 'a')).to.deep.equal(a)
    expect(repo.byName('other', 'a')).to.deep.equal(other)
    expect(repo.byId('other', a.id)).to.equal(undefined)
    expect(repo.byName('default', 'none')).to.equal(undefined)
    expect(repo.byId('default', c.id)).to.deep.equal(c)
  })

  it('keeps each offset beside its subscription', async () => {
    await insertAll()
    expect([a, b, c, other].map((s) => repo.offset(s.id))).to.deep.equal([12, 0, 3, 7])
    expect(repo.offset(newId<SubscriptionId>())).to.equal(undefined)
    await db.transaction((tx) => repo.setOffset(tx, b.id, 40))
    expect(repo.offset(b.id)).to.equal(40)
  })

  it('replace rewrites the definition and updated time, never the offset, id or created time', async () => {
    await insertAll()
    await db.transaction((tx) => repo.setOffset(tx, a.id, 20))
    const replaced: Subscription = { ...a, filter: { events: '.*' }, options: { firstEvent: '12', batch: true, readAhead: 50, batchTimeout: '50ms' }, updated: '2024-03-01T00:00:00Z' as Timestamp }
    await db.transaction((tx) => repo.replace(tx, replaced))
    expect(repo.byId('default', a.id)).to.deep.equal(replaced)
    expect(repo.offset(a.id)).to.equal(20)
  })

  it('the name is unique in its namespace', async () => {
    await insertAll()
    const err = await db.transaction((tx) => repo.insert(tx, sub('default', 'a', '2024-01-01T00:00:09Z'), 0)).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(Error)
    expect(repo.list('default', page).map((s) => s.name)).to.deep.equal(['c', 'b', 'a'])
  })

  it('lists newest first, paged, and every subscription oldest first', async () => {
    await insertAll()
    expect(repo.list('default', page).map((s) => s.name)).to.deep.equal(['c', 'b', 'a'])
    expect(repo.list('default', { limit: 1, skip: 1 }).map((s) => s.name)).to.deep.equal(['b'])
    expect(repo.list('other', page)).to.deep.equal([other])
    expect(repo.all().map((s) => `${s.namespace}:${s.name}`)).to.deep.equal(['default:a', 'default:b', 'default:c', 'other:a'])
  })

  it("filters on FireFly's subscription fields", async () => {
    await insertAll()
    const names = (...conds: FilterCondition[]) => repo.list('default', { ...page, filter: conds.map((x) => [x]) }).map((s) => s.name)
    expect(names(cond('id', 'eq', b.id))).to.deep.equal(['b'])
    expect(names(cond('name', 'eq', 'a'))).to.deep.equal(['a'])
    expect(names(cond('transport', 'eq', 'websockets'))).to.deep.equal(['c', 'b', 'a'])
    expect(names(cond('events', 'eq', 'message_confirmed'))).to.deep.equal(['a'])
    expect(names(cond('events', 'eq', ''))).to.deep.equal(['c', 'b'])
    expect(names(cond('filters', 'contains', '"topic":"x"'))).to.deep.equal(['b'])
    expect(names(cond('options', 'contains', '"readAhead":5'))).to.deep.equal(['a'])
    expect(names(cond('created', 'gt', '2024-01-01T00:00:02Z'))).to.deep.equal(['c', 'b'])
    expect(names(cond('created', 'lt', '2024-01-01T00:00:02.5Z'))).to.deep.equal(['a'])
    expect(names(cond('updated', 'gt', '2024-01-15T00:00:00Z'))).to.deep.equal(['c'])
    expect(() => names(cond('sequence', 'eq', '1'))).to.throw(ParleyError, /unknown filter field "sequence"/)
  })

  it('delete removes a subscription and its offset, and answers whether there was one', async () => {
    await insertAll()
    expect(await db.transaction((tx) => repo.delete(tx, a.id))).to.equal(true)
    expect(repo.byId('default', a.id)).to.equal(undefined)
    expect(repo.offset(a.id)).to.equal(undefined)
    expect(await db.transaction((tx) => repo.delete(tx, a.id))).to.equal(false)
    // An acknowledgement arriving after the delete writes nothing back.
    await db.transaction((tx) => repo.setOffset(tx, a.id, 99))
    expect(repo.offset(a.id)).to.equal(undefined)
    expect(db.get<{ n: number }>('SELECT COUNT(*) AS n FROM offsets')!.n).to.equal(3)
  })

  it('survives a restart: definitions and offsets are durable', async () => {
    await insertAll()
    await db.transaction((tx) => repo.setOffset(tx, c.id, 8))
    await db.close()
    db = await Database.open({ dir, migrations, buildSnapshot: snapshotInThread })
    repo = new SubscriptionsRepo(db)
    expect(repo.all()).to.deep.equal([a, b, c, other])
    expect(repo.offset(c.id)).to.equal(8)
  })
})
