import { expect } from 'chai'
import pg from 'pg'
import { DatabaseError, type Migration } from '../../../../../node/db/database.js'
import { PgDatabase } from '../../../../../node/db/pg/pg-database.js'
import { testDatabase } from '../../../../support/postgres.js'

const items: Migration = { version: 1, name: 'items', up: 'CREATE TABLE items (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, n INTEGER, body BLOB)' }

/**
 * The PostgreSQL engine keeps the sql.js engine's turn semantics over its bridge: one SQL transaction per event-loop
 * turn, a savepoint per transaction function, promises resolved only once the turn's COMMIT returned.
 */
describe('PostgreSQL engine: turns, savepoints and commits through the bridge', () => {
  let db: PgDatabase
  let drop: () => Promise<void>
  let other: pg.Client
  const ids = (): string[] => db.all<{ id: string }>('SELECT id FROM items ORDER BY seq').map((r) => r.id)
  /** What another connection sees: only what is committed. */
  const committed = async (): Promise<string[]> => (await other.query<{ id: string }>('SELECT id FROM items ORDER BY seq')).rows.map((r) => r.id)

  before(async () => {
    const d = await testDatabase({ empty: true })
    drop = d.drop
    db = await PgDatabase.open({ url: d.url, migrations: [items] })
    other = new pg.Client({ connectionString: d.url })
    await other.connect()
  })
  beforeEach(() => db.transaction((tx) => tx.run('TRUNCATE items RESTART IDENTITY')))
  after(async () => {
    await other?.end()
    await db?.close()
    await drop?.()
  })

  it('shares one COMMIT among the transactions of a turn, and resolves each only once it returned', async () => {
    const before = db.stats().lastSeq
    const a = db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['a']).lastInsertRowid)
    const b = db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['b']).lastInsertRowid)
    // Reads outside a transaction see the turn's writes; another connection does not, yet.
    expect(ids()).to.deep.equal(['a', 'b'])
    expect(await committed()).to.deep.equal([])
    let resolved = false
    void a.then(() => (resolved = true))
    expect(resolved).to.equal(false)
    expect(await Promise.all([a, b])).to.deep.equal([1, 2])
    expect(await committed()).to.deep.equal(['a', 'b'])
    expect(db.stats().lastSeq).to.equal(before + 1)
  })

  it('rolls back a function that throws, or whose statement failed, alone; the rest of its turn commits', async () => {
    const kept = db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['kept']))
    const thrown = db
      .transaction((tx) => {
        tx.run('INSERT INTO items (id) VALUES (?)', ['thrown'])
        throw new Error('changed its mind')
      })
      .catch((e: Error) => e.message)
    const failed = db
      .transaction((tx) => {
        tx.run('INSERT INTO items (id) VALUES (?)', ['half'])
        try {
          tx.run('INSERT INTO items (id) VALUES (?)', ['kept'])
        } catch {
          // Swallowed: the transaction still rolls back.
        }
      })
      .catch((e: unknown) => e)
    const after = db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['after']))
    await kept
    await after
    expect(await thrown).to.equal('changed its mind')
    const err = (await failed) as DatabaseError
    expect(err).to.be.instanceOf(DatabaseError)
    expect(err.code).to.equal('DB_CONSTRAINT')
    expect(await committed()).to.deep.equal(['kept', 'after'])
  })

  it("rolls back a turn's first writer that fails without a savepoint, and begins again for the next", async () => {
    const before = db.stats().statements!
    const first = db
      .transaction((tx) => {
        tx.run('INSERT INTO items (id) VALUES (?)', ['first'])
        tx.run('INSERT INTO items (id) VALUES (?)', ['first'])
      })
      .catch((e: DatabaseError) => e.code)
    const second = db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['second']))
    const third = db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['third']))
    expect(await first).to.equal('DB_CONSTRAINT')
    await Promise.all([second, third])
    expect(await committed()).to.deep.equal(['second', 'third'])
    // BEGIN, two inserts, ROLLBACK, BEGIN, the second's insert, then the third's savepoint, insert, release, COMMIT.
    expect(db.stats().statements! - before).to.equal(10)
  })

  it('keeps the turn when a read outside any transaction fails in it', async () => {
    const first = db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['one']))
    expect(() => db.all('SELECT no_such_column FROM items')).to.throw(DatabaseError, /DB_SQL: column "no_such_column" does not exist/)
    const second = db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['two']))
    await Promise.all([first, second])
    expect(await committed()).to.deep.equal(['one', 'two'])
  })

  it('resolves a transaction that only read once the commits before it returned, without a commit of its own', async () => {
    await db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['x']))
    const before = db.stats().lastSeq
    expect(await db.transaction((tx) => tx.all('SELECT id FROM items'))).to.deep.equal([{ id: 'x' }])
    await new Promise((r) => setImmediate(r))
    expect(db.stats().lastSeq).to.equal(before)
  })

  it('refuses what sql.js refuses: writes outside a transaction, a promise from the function, a transaction inside one', async () => {
    expect(() => db.all("INSERT INTO items (id) VALUES ('w')")).to.throw(DatabaseError, /DB_MISUSE: writes go through transaction\(\)/)
    const p = await db.transaction((() => Promise.resolve(1)) as never).catch((e: DatabaseError) => e.code)
    expect(p).to.equal('DB_MISUSE')
    const nested = await db.transaction(() => db.transaction(() => 1)).catch((e: DatabaseError) => e.code)
    expect(nested).to.equal('DB_MISUSE')
    expect(() => db.all('COMMIT')).to.throw(DatabaseError, /DB_MISUSE/)
  })

  it('reads integers back as numbers, bytes as Uint8Array, and refuses an integer past 2^53', async () => {
    await db.transaction((tx) => {
      tx.run('INSERT INTO items (id, n, body) VALUES (?, ?, ?)', ['big', 2n ** 53n - 1n, new Uint8Array([1, 2, 255])])
      tx.run('INSERT INTO items (id, n) VALUES (?, ?)', ['past', 2n ** 53n + 1n])
    })
    const row = db.get<{ n: number; body: Uint8Array }>("SELECT n, body FROM items WHERE id = 'big'")!
    expect(row.n).to.equal(Number.MAX_SAFE_INTEGER)
    expect(row.body).to.be.instanceOf(Uint8Array)
    expect([...row.body]).to.deep.equal([1, 2, 255])
    expect(() => db.get("SELECT n FROM items WHERE id = 'past'")).to.throw(DatabaseError, /is past 2\^53/)
  })

  it('shows its engine, health and size', () => {
    const s = db.status()
    expect(s).to.include({ engine: 'postgres', healthy: true })
    expect(s.sizeBytes).to.be.greaterThan(0)
  })
})
