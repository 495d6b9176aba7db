import { expect } from 'chai'
import pg from 'pg'
import { DatabaseError, type Migration } from '../../../../../node/db/database.js'
import type { Step } from '../../../../../node/db/pg/bridge-protocol.js'
import { coalesceGroups } from '../../../../../node/db/pg/coalesce.js'
import { InsertRows } from '../../../../../node/db/pg/insert-rows.js'
import { PgDatabase } from '../../../../../node/db/pg/pg-database.js'
import { BEGIN, RELEASE, SAVEPOINT } from '../../../../../node/db/pg/pg-tick.js'
import { testDatabase } from '../../../../support/postgres.js'

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
})

/** On the server: one function's failing row fails it alone, as without merging, and the rest of the turn commits. */
describe('PostgreSQL engine: queued inserts of a turn merged', () => {
  const schema: Migration = { version: 1, name: 'a and b', up: 'CREATE TABLE a (x TEXT NOT NULL UNIQUE); CREATE TABLE b (y TEXT NOT NULL)' }
  let db: PgDatabase
  let drop: () => Promise<void>
  let other: pg.Client
  before(async () => {
    const d = await testDatabase({ empty: true })
    drop = d.drop
    db = await PgDatabase.open({ url: d.url, migrations: [schema] })
    other = new pg.Client({ connectionString: d.url })
    await other.connect()
  })
  after(async () => {
    await other?.end()
    await db?.close()
    await drop?.()
  })
  const committed = async (table: string, column: string): Promise<string[]> => (await other.query<{ v: string }>(`SELECT ${column} AS v FROM ${table} ORDER BY v`)).rows.map((r) => r.v)
  const send = (x: string): Promise<void> =>
    db.transaction((tx) => {
      tx.write('INSERT INTO a (x) VALUES (?)', [x])
      tx.write('INSERT INTO b (y) VALUES (?)', [x])
    })

  it('sends the turn\'s rows as one insert per table', async () => {
    const before = db.stats().statements!
    await Promise.all(['1', '2', '3', '4'].map(send))
    expect(await committed('a', 'x')).to.deep.equal(['1', '2', '3', '4'])
    expect(await committed('b', 'y')).to.deep.equal(['1', '2', '3', '4'])
    // BEGIN and the savepoint, two inserts of four rows, RELEASE, COMMIT: without merging, 4 statements a function.
    expect(db.stats().statements! - before).to.equal(6)
  })

  it('fails only the function whose row fails; the others of its turn commit', async () => {
    const results = await Promise.allSettled(['5', '1', '6', '7'].map(send))
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
    const err = (results[1] as PromiseRejectedResult).reason as DatabaseError
    expect(err).to.be.instanceOf(DatabaseError)
    expect(err.code).to.equal('DB_CONSTRAINT')
    expect(await committed('a', 'x')).to.deep.equal(['1', '2', '3', '4', '5', '6', '7'])
    // The failed function's row in b went with its savepoint.
    expect(await committed('b', 'y')).to.deep.equal(['1', '2', '3', '4', '5', '6', '7'])
  })
})
