import { expect } from 'chai'
import { DatabaseError, type Migration } from '../../../../../node/db/database.js'
import { PgDatabase } from '../../../../../node/db/pg/pg-database.js'
import { itemsDatabase } from '../../../../support/db/pg-items.js'

const items: Migration = { version: 1, name: 'items', up: 'CREATE TABLE items (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, n INTEGER)' }
const INSERT = 'INSERT INTO items (id) VALUES (?)'

/**
 * tx.write on PostgreSQL: writes whose result nobody reads are queued and go with the next statement that needs an
 * answer: the function's own, or, for a function that only queued writes, the turn's next round trip or its COMMIT.
 * A failure among them is still that function's alone.
 */
describe('PostgreSQL engine: queued writes (tx.write)', () => {
  const fixture = itemsDatabase(items)
  let db: PgDatabase
  before(() => (db = fixture.db))
  const committed = (): Promise<string[]> => fixture.committed()
  const failure = (p: Promise<unknown>): Promise<unknown> => p.then(() => 'resolved', (e: unknown) => e)

  it('sends the functions of a turn that only queued writes with its COMMIT: no round trip is waited for', async () => {
    await db.checkpoint()
    const before = db.stats()
    const a = db.transaction((tx) => {
      for (const id of ['a', 'b', 'c']) tx.write(INSERT, [id])
    })
    const b = db.transaction((tx) => {
      tx.write(INSERT, ['d'])
      tx.write(INSERT, ['e'])
    })
    expect(db.stats().roundTrips! - before.roundTrips!).to.equal(0)
    await Promise.all([a, b])
    expect(await committed()).to.deep.equal(['a', 'b', 'c', 'd', 'e'])
  })

  it('sends a function that also needs an answer in one round trip with what it queued', async () => {
    await db.checkpoint()
    const before = db.stats()
    const n = db.transaction((tx) => {
      tx.write(INSERT, ['a'])
      tx.write(INSERT, ['b'])
      return tx.run('UPDATE items SET n = 1').changes
    })
    expect(db.stats().roundTrips! - before.roundTrips!).to.equal(1)
    expect(await n).to.equal(2)
  })

  it('fails a function whose queued write a later function of its turn sent, alone: the later one sees none of it', async () => {
    await db.transaction((tx) => tx.run(INSERT, ['taken']))
    const failed = failure(
      db.transaction((tx) => {
        tx.write(INSERT, ['half'])
        tx.write(INSERT, ['taken'])
      }),
    )
    const seen = db.transaction((tx) => tx.all<{ id: string }>('SELECT id FROM items ORDER BY seq').map((r) => r.id))
    expect(await seen).to.deep.equal(['taken'])
    expect(((await failed) as DatabaseError).code).to.equal('DB_CONSTRAINT')
    expect(await committed()).to.deep.equal(['taken'])
  })

  it('lets the function read what it queued, even before anything of its turn reached the server', async () => {
    const seen = await db.transaction((tx) => {
      tx.write(INSERT, ['x'])
      return tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM items')?.n
    })
    expect(seen).to.equal(1)
    // A read outside the function, in its turn, sees it too.
    const p = db.transaction((tx) => tx.write(INSERT, ['y']))
    expect(db.all<{ id: string }>('SELECT id FROM items ORDER BY seq').map((r) => r.id)).to.deep.equal(['x', 'y'])
    await p
  })

  it('fails the function whose queued write fails, alone: the rest of its turn commits', async () => {
    await db.transaction((tx) => tx.run(INSERT, ['taken']))
    const first = db.transaction((tx) => tx.write(INSERT, ['first']))
    const failed = failure(
      db.transaction((tx) => {
        tx.write(INSERT, ['half'])
        tx.write(INSERT, ['taken'])
      }),
    )
    const after = db.transaction((tx) => tx.write(INSERT, ['after']))
    const err = await failed
    expect(err).to.be.instanceOf(DatabaseError)
    expect((err as DatabaseError).code).to.equal('DB_CONSTRAINT')
    // Named by the statement that failed, though it was sent with others.
    expect((err as DatabaseError).message).to.match(/INSERT INTO items/)
    await Promise.all([first, after])
    expect(await committed()).to.deep.equal(['taken', 'first', 'after'])
  })

  it('fails the turn\'s first writing function alone when its queued writes fail', async () => {
    await db.transaction((tx) => tx.run(INSERT, ['taken']))
    const failed = failure(db.transaction((tx) => tx.write(INSERT, ['taken'])))
    const next = db.transaction((tx) => tx.write(INSERT, ['next']))
    expect((await failed as DatabaseError).code).to.equal('DB_CONSTRAINT')
    await next
    expect(await committed()).to.deep.equal(['taken', 'next'])
  })

  it('sends nothing of a function that throws before its queued writes went', async () => {
    await db.checkpoint()
    const before = db.stats()
    const kept = db.transaction((tx) => tx.write(INSERT, ['kept']))
    const thrown = failure(
      db.transaction((tx) => {
        tx.write(INSERT, ['never'])
        throw new Error('changed its mind')
      }),
    )
    const first = failure(
      db.transaction((tx) => {
        tx.write(INSERT, ['never either'])
        throw new Error('so did this one')
      }),
    )
    expect(((await thrown) as Error).message).to.equal('changed its mind')
    expect(((await first) as Error).message).to.equal('so did this one')
    await kept
    expect(db.stats().roundTrips! - before.roundTrips!).to.equal(0)
    expect(await committed()).to.deep.equal(['kept'])
  })

  it('refuses a read through write, which would answer nothing', async () => {
    const err = await failure(db.transaction((tx) => tx.write('SELECT id FROM items')))
    expect((err as DatabaseError).code).to.equal('DB_MISUSE')
  })
})
