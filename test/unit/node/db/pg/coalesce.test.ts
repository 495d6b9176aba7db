import { expect } from 'chai'
import { DatabaseError, type Migration } from '../../../../../node/db/database.js'
import type { Step } from '../../../../../node/db/pg/bridge-protocol.js'
import { coalesceGroups } from '../../../../../node/db/pg/coalesce.js'
import { InsertRows } from '../../../../../node/db/pg/insert-rows.js'
import { BEGIN, RELEASE, SAVEPOINT } from '../../../../../node/db/pg/pg-tick.js'
import { itemsDatabase } from '../../../../support/db/pg-items.js'

const A = 'INSERT INTO a (x) VALUES ($1)'
const B = 'INSERT INTO b (y) VALUES ($1)'
const w = (text: string, v: unknown, group: number): Step => ({ text, values: [v], name: text === A ? 'p_a' : 'p_b', group })
const fn = (group: number, ...writes: Step[]): Step[] => [{ ...SAVEPOINT, group }, ...writes, RELEASE]

describe('coalesceGroups: a turn\'s functions that wrote the same single-row inserts share multi-row ones', () => {
  it('merges consecutive groups of the same writes into one group, a statement per write, the groups kept as its fallback', () => {
    const groups = [fn(1, w(A, 1, 1), w(B, 1, 1)), fn(2, w(A, 2, 2), w(B, 2, 2)), fn(3, w(A, 3, 3), w(B, 3, 3))]
    const steps = [BEGIN, ...groups.flat()]
    const out = coalesceGroups(steps, new InsertRows(), () => 9)
    expect(out.map((s) => [s.text, s.values, s.group])).to.deep.equal([
      [BEGIN.text, undefined, undefined],
      [SAVEPOINT.text, undefined, 9],
      ['INSERT INTO a (x) VALUES ($1), ($2)', [1, 2], 9],
      [A, [3], 9],
      ['INSERT INTO b (y) VALUES ($1), ($2)', [1, 2], 9],
      [B, [3], 9],
      [RELEASE.text, undefined, undefined],
    ])
    expect(out[2]!.fallback).to.deep.equal(groups.flat())
    expect(out.slice(3).some((s) => s.fallback)).to.equal(false)
  })

  it('leaves alone a lone group, groups of other writes, and what is not a group', () => {
    const other = fn(2, w(B, 2, 2), w(A, 2, 2))
    const update: Step[] = [{ ...SAVEPOINT, group: 3 }, { text: 'UPDATE a SET x = $1', values: [0], group: 3 }, RELEASE]
    const steps = [BEGIN, ...fn(1, w(A, 1, 1), w(B, 1, 1)), ...other, ...update, w(A, 4, undefined as never)]
    expect(coalesceGroups(steps, new InsertRows(), () => 9)).to.deep.equal(steps)
  })

  it('leaves alone groups that write one table twice, by one text or by two', () => {
    const A2 = 'INSERT INTO a (x, z) VALUES ($1, 0)'
    const twice = [BEGIN, ...fn(1, w(A, 1, 1), w(A, 2, 1)), ...fn(2, w(A, 3, 2), w(A, 4, 2))]
    expect(coalesceGroups(twice, new InsertRows(), () => 9)).to.deep.equal(twice)
    const two = [BEGIN, ...fn(1, w(A, 1, 1), { ...w(A, 2, 1), text: A2 }), ...fn(2, w(A, 3, 2), { ...w(A, 4, 2), text: A2 })]
    expect(coalesceGroups(two, new InsertRows(), () => 9)).to.deep.equal(two)
  })
})

/** On the server: one function's failing row fails it alone, as without merging, and the rest of the turn commits. */
describe('PostgreSQL engine: queued inserts of a turn merged', () => {
  const schema: Migration = {
    version: 1,
    name: 'items, notes, and a table with a trigger',
    up: `CREATE TABLE items (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE);
      CREATE TABLE notes (item TEXT NOT NULL);
      CREATE TABLE watched (item TEXT NOT NULL);
      CREATE TRIGGER watched_noted AFTER INSERT ON watched BEGIN INSERT INTO notes (item) VALUES (NEW.item); END;
      CREATE TABLE kv (seq INTEGER PRIMARY KEY AUTOINCREMENT, k TEXT NOT NULL UNIQUE, v TEXT NOT NULL);
      CREATE TABLE parents (id TEXT PRIMARY KEY);
      CREATE TABLE children (id TEXT NOT NULL, parent TEXT NOT NULL REFERENCES parents (id));`,
  }
  const fixture = itemsDatabase(schema)
  const notes = (): string[] => fixture.db.all<{ item: string }>('SELECT item FROM notes ORDER BY item').map((r) => r.item)
  const send = (id: string): Promise<void> =>
    fixture.db.transaction((tx) => {
      tx.write('INSERT INTO items (id) VALUES (?)', [id])
      tx.write('INSERT INTO notes (item) VALUES (?)', [id])
    })
  beforeEach(() => fixture.db.transaction((tx) => tx.run('TRUNCATE notes, kv, parents, children')))
  const KV = 'INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT DO NOTHING'
  const kv = (): string[] => fixture.db.all<{ k: string; v: string }>('SELECT k, v FROM kv ORDER BY k').map((r) => `${r.k}=${r.v}`)

  it("sends the turn's rows as one insert per table", async () => {
    const before = fixture.db.stats().statements!
    await Promise.all(['1', '2', '3', '4'].map(send))
    // BEGIN and the savepoint, two inserts of four rows, RELEASE, COMMIT: without merging, 4 statements a function.
    expect(fixture.db.stats().statements! - before).to.equal(6)
    expect(await fixture.committed()).to.deep.equal(['1', '2', '3', '4'])
    expect(notes()).to.deep.equal(['1', '2', '3', '4'])
  })

  it('fails only the function whose row fails; the others of its turn commit', async () => {
    await send('1')
    const results = await Promise.allSettled(['5', '1', '6', '7'].map(send))
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
    const err = (results[1] as PromiseRejectedResult).reason as DatabaseError
    expect(err).to.be.instanceOf(DatabaseError)
    expect(err.code).to.equal('DB_CONSTRAINT')
    expect(await fixture.committed()).to.deep.equal(['1', '5', '6', '7'])
    // The failed function's note went with its savepoint.
    expect(notes()).to.deep.equal(['1', '5', '6', '7'])
  })

  it('leaves alone the inserts into a table with a trigger, which could see the rows of later functions', async () => {
    const before = fixture.db.stats().statements!
    await Promise.all(['1', '2', '3'].map((id) => fixture.db.transaction((tx) => tx.write('INSERT INTO watched (item) VALUES (?)', [id]))))
    // BEGIN, then a savepoint, the insert and RELEASE for each, COMMIT.
    expect(fixture.db.stats().statements! - before).to.equal(11)
    expect(notes()).to.deep.equal(['1', '2', '3'])
  })

  it('keeps a serial order when each function writes one table twice: the first to write a key keeps it', async () => {
    await Promise.all([
      fixture.db.transaction((tx) => {
        tx.write(KV, ['x', 'f1'])
        tx.write(KV, ['y', 'f1'])
      }),
      fixture.db.transaction((tx) => {
        tx.write(KV, ['y', 'f2'])
        tx.write(KV, ['x', 'f2'])
      }),
    ])
    expect(kv()).to.deep.equal(['x=f1', 'y=f1'])
  })

  it('leaves alone the inserts into tables on either side of a foreign key: a row finds only parents written before it', async () => {
    const family = (parent: string, child: string): Promise<void> =>
      fixture.db.transaction((tx) => {
        tx.write('INSERT INTO parents (id) VALUES (?)', [parent])
        tx.write('INSERT INTO children (id, parent) VALUES (?, ?)', [`${parent}-child`, child])
      })
    // In order, a's child misses b, not yet written, and b's child misses a, whose function failed.
    const results = await Promise.allSettled([family('a', 'b'), family('b', 'a'), family('c', 'c')])
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected', 'fulfilled'])
    expect(((results[0] as PromiseRejectedResult).reason as DatabaseError).code).to.equal('DB_CONSTRAINT')
    expect(fixture.db.all<{ id: string }>('SELECT id FROM parents ORDER BY id').map((r) => r.id)).to.deep.equal(['c'])
  })

  it('fails only the function whose row fails in the second table and in the last slice of rows', async () => {
    await fixture.db.transaction((tx) => tx.write(KV, ['dup', 'x']))
    const send2 = (id: string, k: string): Promise<void> =>
      fixture.db.transaction((tx) => {
        tx.write('INSERT INTO items (id) VALUES (?)', [id])
        tx.write('INSERT INTO kv (k, v) VALUES (?, ?)', [k, id])
      })
    // Five rows per table go as slices of four and one; the failing row is the one.
    const results = await Promise.allSettled([send2('a', 'ka'), send2('b', 'kb'), send2('c', 'kc'), send2('d', 'kd'), send2('e', 'dup')])
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'rejected'])
    expect(await fixture.committed()).to.deep.equal(['a', 'b', 'c', 'd'])
    expect(kv()).to.deep.equal(['dup=x', 'ka=a', 'kb=b', 'kc=c', 'kd=d'])
  })
})
