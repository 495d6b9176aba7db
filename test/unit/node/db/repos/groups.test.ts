import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { TempDirs } from '../../../../support/db/helpers.js'
import { forEachEngine, openRepos, type Repos } from '../../../../support/repos.js'
import { sealGroup } from '../../../../../node/identity/group-resolver.js'
import { nonceKey } from '../../../../../node/core/hashes.js'
import { ParleyError } from '../../../../../node/core/errors.js'
import { DatabaseError } from '../../../../../node/db/database.js'
import { newId, type Hash, type IdentityId, type MessageId } from '../../../../../node/core/ids.js'
import type { Timestamp } from '../../../../../node/core/time.js'
import type { FilterCondition, FilterOp, Group, GroupMember } from '../../../../../node/model/index.js'

const sha = (s: string): Hash => createHash('sha256').update(s).digest('hex') as Hash
const NODE = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}` as IdentityId
const org = (n: number) => `did:firefly:org/org${n}`

function group(namespace: string, name: string, members: GroupMember[], created: string): Group {
  const sealed = sealGroup(namespace, name, members)
  return { hash: sealed.hash, namespace, name, members: sealed.members, created: created as Timestamp }
}
const cond = (field: string, op: FilterOp, value: string): FilterCondition => ({ field, op, value, not: false, caseInsensitive: false })

forEachEngine('groups: storage', (engine) => {
  const temp = new TempDirs()
  let dir: string
  let repos: Repos

  beforeEach(async () => {
    dir = join(await temp.make('parley-groups-db-'), 'db')
    repos = await openRepos(dir, engine)
  })
  afterEach(() => repos.db.close())
  after(() => temp.cleanup())

  describe('the groups repository', () => {
    const g1 = group('default', 'one', [{ identity: org(1), node: NODE(1) }, { identity: org(0), node: NODE(0) }], '2024-01-01T00:00:01Z')
    const g2 = group('default', 'two', [{ identity: org(0), node: NODE(0) }, { identity: org(2), node: NODE(2) }], '2024-01-01T00:00:02.5Z')
    const g3 = group('default', '', [{ identity: org(0), node: NODE(0) }, { identity: org(1), node: NODE(1) }, { identity: org(10), node: NODE(10) }], '2024-01-01T00:00:03Z')
    const other = group('other', 'one', [{ identity: org(1), node: NODE(1) }, { identity: org(0), node: NODE(0) }], '2024-01-01T00:00:04Z')
    const insertAll = () => repos.db.transaction((tx) => [g1, g2, g3, other].map((g) => repos.groups.insert(tx, g)))

    it('stores a group once: a second insert of its hash answers false and changes nothing', async () => {
      expect(await insertAll()).to.deep.equal([true, true, true, true])
      expect(await repos.db.transaction((tx) => repos.groups.insert(tx, { ...g1, name: 'changed', created: '2030-01-01T00:00:00Z' as Timestamp }))).to.equal(false)
      expect(repos.groups.byHash(g1.hash)).to.deep.equal(g1)
      expect(repos.db.all('SELECT grp, idx, identity, node FROM group_members WHERE grp = ? ORDER BY idx', [g1.hash])).to.deep.equal([
        { grp: g1.hash, idx: 0, identity: org(0), node: NODE(0) },
        { grp: g1.hash, idx: 1, identity: org(1), node: NODE(1) },
      ])
      expect(repos.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM group_members')!.n).to.equal(9)
    })

    it('answers a group only in its namespace; byHash whatever the namespace', async () => {
      await insertAll()
      expect(repos.groups.get('default', g2.hash)).to.deep.equal(g2)
      expect(repos.groups.get('other', g2.hash)).to.equal(undefined)
      expect(repos.groups.get('other', other.hash)).to.deep.equal(other)
      expect(repos.groups.byHash(other.hash)).to.deep.equal(other)
      expect(repos.groups.get('default', sha('none'))).to.equal(undefined)
    })

    it('lists a namespace newest first, with paging and FireFly\'s filters', async () => {
      await insertAll()
      const list = (filter?: FilterCondition[][], limit = 25, skip = 0) => repos.groups.list('default', { ...(filter ? { filter } : {}), limit, skip }).map((g) => g.name)
      expect(list()).to.deep.equal(['', 'two', 'one'])
      expect(list(undefined, 1, 1)).to.deep.equal(['two'])
      expect(list([[cond('hash', 'eq', g1.hash)]])).to.deep.equal(['one'])
      expect(list([[cond('name', 'eq', 'one')], [cond('created', 'lt', '2024-01-01T00:00:02Z')]])).to.deep.equal(['one'])
      expect(list([[cond('created', 'gte', '2024-01-01T00:00:02.5Z')]])).to.deep.equal(['', 'two'])
      expect(list([[cond('name', 'eq', 'one'), cond('name', 'eq', 'two')]])).to.deep.equal(['two', 'one'])
      // members: the JSON text of the sorted member list; quotes bound a DID, so org1 is not org10.
      expect(list([[cond('members', 'contains', `"${org(1)}"`)]])).to.deep.equal(['', 'one'])
      expect(list([[cond('members', 'contains', `"${org(10)}"`)]])).to.deep.equal([''])
      expect(list([[cond('members', 'contains', NODE(2))]])).to.deep.equal(['two'])
      expect(list([[cond('message', 'eq', 'x')]])).to.deep.equal([])
      expect(() => list([[cond('ledger', 'eq', 'x')]])).to.throw(ParleyError, /unknown filter field "ledger"; filterable: hash, message, name, members, created/)
    })

    it('records the groupinit message once', async () => {
      await insertAll()
      const [m1, m2] = [newId<MessageId>(), newId<MessageId>()]
      await repos.db.transaction((tx) => repos.groups.setMessage(tx, g1.hash, m1))
      await repos.db.transaction((tx) => repos.groups.setMessage(tx, g1.hash, m2))
      expect(repos.groups.get('default', g1.hash)!.message).to.equal(m1)
      expect(repos.groups.list('default', { filter: [[cond('message', 'eq', m1)]], limit: 5, skip: 0 }).map((g) => g.hash)).to.deep.equal([g1.hash])
    })

    it('the groups of an org or of a node are one query over the group_members index', async () => {
      await insertAll()
      expect(repos.groups.ofMember({ identity: org(1) }).map((g) => g.hash)).to.deep.equal([other.hash, g3.hash, g1.hash])
      expect(repos.groups.ofMember({ identity: org(1) }, 'default').map((g) => g.hash)).to.deep.equal([g3.hash, g1.hash])
      expect(repos.groups.ofMember({ node: NODE(2) }).map((g) => g.hash)).to.deep.equal([g2.hash])
      expect(repos.groups.ofMember({ identity: org(9) })).to.deep.equal([])
      // Also a member on two nodes: the group once.
      const twice = group('default', 'twice', [{ identity: org(5), node: NODE(5) }, { identity: org(5), node: NODE(6) }], '2024-01-01T00:00:05Z')
      await repos.db.transaction((tx) => repos.groups.insert(tx, twice))
      expect(repos.groups.ofMember({ identity: org(5) }).map((g) => g.name)).to.deep.equal(['twice'])
    })

    // SQLite's plan (the default engine has no statistics to plan by); PostgreSQL chooses by its own.
    if (engine === 'sqljs') it('the groups of a member are found through the group_members indexes', () => {
      const plan = (column: string) =>
        repos.db
          .all<{ detail: string }>(`EXPLAIN QUERY PLAN SELECT * FROM groups WHERE hash IN (SELECT grp FROM group_members WHERE ${column} = ?) ORDER BY seq DESC`, ['x'])
          .map((r) => r.detail)
          .join(' | ')
      expect(plan('identity')).to.match(/USING COVERING INDEX group_members_identity \(identity=\?\)/)
      expect(plan('identity')).to.match(/USING INDEX sqlite_autoindex_groups_1 \(hash=\?\)/)
      expect(plan('node')).to.match(/USING COVERING INDEX group_members_node \(node=\?\)/)
    })

    it('is durable across a reopen', async () => {
      await insertAll()
      await repos.db.close()
      repos = await openRepos(dir, engine)
      expect(repos.groups.byHash(g3.hash)).to.deep.equal(g3)
      expect(repos.groups.ofMember({ identity: org(10) }).map((g) => g.hash)).to.deep.equal([g3.hash])
    })
  })

  describe('the nonces repository', () => {
    const K1 = nonceKey('topic1', sha('group'), org(0))
    const K2 = nonceKey('topic2', sha('group'), org(0))

    it('gives out consecutive nonces per key, from 0, any number at a time', async () => {
      expect(repos.nonces.peek(K1)).to.equal(0)
      expect(await repos.db.transaction((tx) => repos.nonces.allocate(tx, K1))).to.equal(0)
      expect(await repos.db.transaction((tx) => repos.nonces.allocate(tx, K1, 3))).to.equal(1)
      expect(await repos.db.transaction((tx) => repos.nonces.allocate(tx, K2, 2))).to.equal(0)
      expect(await repos.db.transaction((tx) => repos.nonces.allocate(tx, K1))).to.equal(4)
      expect(repos.nonces.peek(K1)).to.equal(5)
      expect(repos.nonces.peek(K2)).to.equal(2)
    })

    it('allocateFor keys by nonceKey(topic, group, author DID): other topic, group or author, other sequence', async () => {
      const g = sha('group')
      const got = await repos.db.transaction((tx) => [
        repos.nonces.allocateFor(tx, 'topic1', g, org(0)),
        repos.nonces.allocateFor(tx, 'topic1', g, org(0), 2),
        repos.nonces.allocateFor(tx, 'topic1', g, org(1)),
        repos.nonces.allocateFor(tx, 'topic1', sha('other'), org(0)),
        repos.nonces.allocateFor(tx, 'topic2', g, org(0)),
      ])
      expect(got).to.deep.equal([0, 1, 0, 0, 0])
      expect(repos.nonces.peek(K1)).to.equal(3)
      expect(repos.nonces.peek(K1, undefined)).to.equal(repos.nonces.peek(nonceKey('topic1', g, org(0))))
    })

    it('inside a transaction: its allocations follow each other, and roll back with it', async () => {
      const seen = await repos.db.transaction((tx) => [repos.nonces.allocate(tx, K1, 2), repos.nonces.peek(K1, tx), repos.nonces.allocate(tx, K1)])
      expect(seen).to.deep.equal([0, 2, 2])
      let inside: number | undefined
      const failed = await repos.db
        .transaction((tx) => {
          inside = repos.nonces.allocate(tx, K1, 10)
          throw new Error('the seal failed')
        })
        .catch((e: Error) => e.message)
      expect([inside, failed]).to.deep.equal([3, 'the seal failed'])
      // The failed seal's nonces are given out again: no gap in the sequence.
      expect(await repos.db.transaction((tx) => repos.nonces.allocate(tx, K1))).to.equal(3)
    })

    it('refuses a count that is not a positive whole number, and its transaction rolls back', async () => {
      for (const n of [0, -1, 1.5, NaN, Infinity, 2 ** 60]) {
        const err = await repos.db.transaction((tx) => (repos.nonces.allocate(tx, K2), repos.nonces.allocate(tx, K1, n))).catch((e: unknown) => e)
        expect(err, String(n)).to.be.instanceOf(DatabaseError)
        expect((err as DatabaseError).code).to.equal('DB_MISUSE')
      }
      expect([repos.nonces.peek(K1), repos.nonces.peek(K2)]).to.deep.equal([0, 0])
    })

    it('refuses to run past 2^53', async () => {
      await repos.db.transaction((tx) => repos.nonces.allocate(tx, K1, Number.MAX_SAFE_INTEGER))
      const err = await repos.db.transaction((tx) => repos.nonces.allocate(tx, K1)).catch((e: unknown) => e)
      expect(err).to.be.instanceOf(DatabaseError)
      expect(repos.nonces.peek(K1)).to.equal(Number.MAX_SAFE_INTEGER)
    })

    // The crash image is a copy of the sql.js folder; PostgreSQL's crash safety is tested where its server is killed.
    if (engine === 'sqljs') it('is durable: after a reopen, and in what a crash leaves on disk', async () => {
      await repos.db.transaction((tx) => repos.nonces.allocate(tx, K1, 7))
      const crash = await temp.crashImage(dir)
      await repos.db.transaction((tx) => repos.nonces.allocate(tx, K1, 1))
      await repos.db.close()
      repos = await openRepos(dir, engine)
      expect(repos.nonces.peek(K1)).to.equal(8)
      expect(await repos.db.transaction((tx) => repos.nonces.allocate(tx, K1))).to.equal(8)
      const crashed = await openRepos(crash, engine)
      try {
        expect(crashed.nonces.peek(K1)).to.equal(7)
      } finally {
        await crashed.db.close()
      }
    })
  })
})
