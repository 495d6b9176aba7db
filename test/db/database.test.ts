import { expect } from 'chai'
import { Database, DatabaseError, type Tx } from '../../node/db/database.js'
import { TempDirs, itemsMigration } from '../support/db/helpers.js'

function insert(tx: Tx, name: string): number {
  return tx.run('INSERT INTO items (name) VALUES (?)', [name]).lastInsertRowid
}

async function rejection(p: Promise<unknown>): Promise<DatabaseError> {
  try {
    await p
  } catch (err) {
    expect(err).to.be.instanceOf(DatabaseError)
    return err as DatabaseError
  }
  throw new Error('expected a rejection')
}

function thrown(f: () => unknown): DatabaseError {
  try {
    f()
  } catch (err) {
    expect(err).to.be.instanceOf(DatabaseError)
    return err as DatabaseError
  }
  throw new Error('expected an exception')
}

describe('db: transactions and reads', function () {
  const temp = new TempDirs()
  let db: Database

  beforeEach(async function () {
    db = await Database.open({ dir: await temp.make(), migrations: [itemsMigration] })
  })
  afterEach(async function () {
    await db.close()
  })
  after(() => temp.cleanup())

  it('commits, returns the function result, and reports changes and rowids', async function () {
    const result = await db.transaction((tx) => {
      const a = insert(tx, 'a')
      const b = tx.run('INSERT INTO items (name) VALUES (?)', ['b'])
      const upd = tx.run('UPDATE items SET data = ? WHERE id IN (?, ?)', [new Uint8Array([1]), a, b.lastInsertRowid])
      return { a, b: b.lastInsertRowid, changed: upd.changes }
    })
    expect(result).to.deep.equal({ a: 1, b: 2, changed: 2 })
    expect(db.all('SELECT id, name FROM items ORDER BY id')).to.deep.equal([
      { id: 1, name: 'a' },
      { id: 2, name: 'b' },
    ])
    expect(db.stats().lastSeq).to.equal(db.stats().durableSeq)
  })

  it('keeps its pragmas and prepared statements across a checkpoint', async function () {
    await db.transaction((tx) => insert(tx, 'before'))
    const count = (): unknown => db.get<{ n: number }>('SELECT COUNT(*) AS n FROM items')?.n
    expect(count()).to.equal(1)
    await db.checkpoint()
    expect(db.get<{ foreign_keys: number }>('PRAGMA foreign_keys')?.foreign_keys).to.equal(1)
    await db.transaction((tx) => insert(tx, 'after'))
    expect(count()).to.equal(2)
  })

  it('rolls back and journals nothing when the function throws', async function () {
    const before = db.stats()
    const err = await db
      .transaction((tx) => {
        insert(tx, 'x')
        throw new Error('boom')
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect((err as Error).message).to.equal('boom')
    expect(db.get('SELECT COUNT(*) AS n FROM items')).to.deep.equal({ n: 0 })
    expect(db.stats().lastSeq).to.equal(before.lastSeq)
    expect(db.stats().journalBytes).to.equal(before.journalBytes)
  })

  it('rolls back a transaction whose statement failed even if the function swallowed the error', async function () {
    await db.transaction((tx) => insert(tx, 'dup'))
    const err = await rejection(
      db.transaction((tx) => {
        insert(tx, 'other')
        try {
          insert(tx, 'dup')
        } catch {
          // ignored on purpose
        }
        return 'done'
      }),
    )
    expect(err.code).to.equal('DB_CONSTRAINT')
    expect(err.message).to.match(/UNIQUE constraint failed/)
    expect(db.all('SELECT name FROM items ORDER BY id')).to.deep.equal([{ name: 'dup' }])
  })

  it('refuses an async transaction function, nested transactions and use of tx after the function', async function () {
    let leaked: Tx | undefined
    const err = await rejection(db.transaction(async (tx) => insert(tx, 'a')))
    expect(err.code).to.equal('DB_MISUSE')
    expect(db.get('SELECT COUNT(*) AS n FROM items')).to.deep.equal({ n: 0 })

    let nested: Promise<unknown> | undefined
    await db.transaction((tx) => {
      leaked = tx
      nested = db.transaction((t2) => insert(t2, 'inner'))
    })
    expect((await rejection(nested ?? Promise.resolve())).code).to.equal('DB_MISUSE')
    expect(thrown(() => leaked?.run('DELETE FROM items')).code).to.equal('DB_MISUSE')
  })

  it('keeps writes out of the read API and transaction control out of tx', async function () {
    expect(thrown(() => db.all('DELETE FROM items')).code).to.equal('DB_MISUSE')
    expect(thrown(() => db.all('WITH x AS (SELECT 1) DELETE FROM items')).code).to.equal('DB_MISUSE')
    expect(db.all('WITH x AS (SELECT 1 AS v) SELECT v FROM x')).to.deep.equal([{ v: 1 }])
    const err = await rejection(db.transaction((tx) => tx.run('COMMIT')))
    expect(err.code).to.equal('DB_MISUSE')
    expect(thrown(() => db.all('SELECT 1; SELECT 2')).code).to.equal('DB_MISUSE')
  })

  it('rejects non-deterministic write SQL but allows it in reads', async function () {
    for (const sql of [
      'INSERT INTO items (name) VALUES (hex(randomblob(4)))',
      "INSERT INTO items (name) VALUES (datetime('now'))",
      'INSERT INTO items (name) VALUES (CURRENT_TIMESTAMP)',
      'UPDATE items SET name = last_insert_rowid()',
    ]) {
      expect((await rejection(db.transaction((tx) => tx.run(sql)))).code, sql).to.equal('DB_NONDETERMINISTIC')
    }
    expect(db.get<{ r: number }>('SELECT random() AS r')?.r).to.be.a('number')
  })

  it('binds named parameters, blobs, bigints and nulls', async function () {
    const blob = new Uint8Array([0, 1, 2, 255])
    await db.transaction((tx) => {
      tx.run('INSERT INTO items (id, name, data) VALUES (:id, :name, :data)', { ':id': 9007199254740991n, ':name': 'n', ':data': blob })
      tx.run('INSERT INTO items (name, data) VALUES (?, ?)', ['m', null])
    })
    const row = db.get('SELECT id, data FROM items WHERE name = ?', ['n'])
    expect(row?.['id']).to.equal(9007199254740991)
    expect(row?.['data']).to.deep.equal(blob)
    expect(thrown(() => db.all('SELECT * FROM items WHERE name = :n', { n: 'x' })).message).to.match(/prefix/)
    expect(thrown(() => db.all('SELECT * FROM items WHERE name = ?', [undefined as unknown as null])).message).to.match(/undefined/)
  })

  it('journals writes made through tx.get (RETURNING)', async function () {
    const row = await db.transaction((tx) => tx.get<{ id: number }>('INSERT INTO items (name) VALUES (?) RETURNING id', ['r']))
    expect(row).to.deep.equal({ id: 1 })
    expect(db.stats().lastSeq).to.be.greaterThan(1)
  })

  it('groups concurrent commits into fewer fsyncs and resolves them in order', async function () {
    const flushesBefore = db.stats().flushes
    const order: number[] = []
    const all = Array.from({ length: 200 }, (_, i) =>
      db.transaction((tx) => insert(tx, `g${i}`)).then((id) => {
        order.push(id)
        return id
      }),
    )
    // Committed in memory already; durability is pending.
    expect(db.get('SELECT COUNT(*) AS n FROM items')).to.deep.equal({ n: 200 })
    await Promise.all(all)
    expect(order).to.deep.equal([...order].sort((a, b) => a - b))
    const flushes = db.stats().flushes - flushesBefore
    expect(flushes).to.be.at.least(1).and.below(20)
  })

  it('resolves a read-only transaction only after earlier commits are durable', async function () {
    const write = db.transaction((tx) => insert(tx, 'w'))
    let writeDone = false
    void write.then(() => (writeDone = true))
    const seen = await db.transaction((tx) => tx.get('SELECT name FROM items'))
    expect(seen).to.deep.equal({ name: 'w' })
    expect(writeDone).to.equal(true)
  })

  it('refuses a second open of the same folder', async function () {
    const dir = await temp.make()
    const first = await Database.open({ dir, migrations: [] })
    try {
      const err = await rejection(Database.open({ dir, migrations: [] }))
      expect(err.code).to.equal('DB_LOCKED')
    } finally {
      await first.close()
    }
    await (await Database.open({ dir, migrations: [] })).close()
  })
})
