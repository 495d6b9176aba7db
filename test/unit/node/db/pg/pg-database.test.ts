import net from 'node:net'
import { expect } from 'chai'
import { DatabaseError, type Migration } from '../../../../../node/db/database.js'
import { MIN_SERVER_VERSION, PgDatabase, serverVersionRefusal } from '../../../../../node/db/pg/pg-database.js'
import { itemsDatabase } from '../../../../support/db/pg-items.js'
import { testDatabase } from '../../../../support/postgres.js'

const items: Migration = { version: 1, name: 'items', up: 'CREATE TABLE items (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, n INTEGER, body BLOB)' }

/**
 * The PostgreSQL engine keeps the sql.js engine's turn semantics over its bridge: one SQL transaction per event-loop
 * turn, a savepoint per transaction function, promises resolved only once the turn's COMMIT returned.
 */
describe('PostgreSQL engine: turns, savepoints and commits through the bridge', () => {
  const fixture = itemsDatabase(items)
  let db: PgDatabase
  before(() => (db = fixture.db))
  const committed = (): Promise<string[]> => fixture.committed()
  const ids = (): string[] => db.all<{ id: string }>('SELECT id FROM items ORDER BY seq').map((r) => r.id)

  it('shares one COMMIT among the transactions of a turn, and resolves each only once it returned', async () => {
    const before = db.stats().lastSeq
    const a = db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['a']).lastInsertRowid)
    const b = db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['b']).lastInsertRowid)
    // Reads outside a transaction see the turn's writes. (Whether another connection sees them yet is a race with
    // the turn's COMMIT, posted as soon as this turn ends: what is checked is that the promises wait for it.)
    expect(ids()).to.deep.equal(['a', 'b'])
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

  it("rolls back a turn's first writer that fails to its own savepoint; the rest of the turn commits", async () => {
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
    // BEGIN, the first's savepoint, two inserts, ROLLBACK TO and RELEASE; then savepoint, insert and release for
    // each of the others, and COMMIT.
    expect(db.stats().statements! - before).to.equal(13)
  })

  it('sends the writes a function queued after its statements with the COMMIT, and rolls the function back whole when one fails', async () => {
    const trips = db.stats().roundTrips!
    const failed = db
      .transaction((tx) => {
        tx.run('INSERT INTO items (id) VALUES (?)', ['read-then-write'])
        tx.write('INSERT INTO items (id) VALUES (?)', ['queued'])
        tx.write('INSERT INTO items (id) VALUES (?)', ['read-then-write'])
      })
      .catch((e: DatabaseError) => e.code)
    // The group goes ahead of the next function's read, which sees the failed function undone.
    let seen: number | undefined
    const kept = db.transaction((tx) => {
      seen = tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM items')!.n
      tx.write('INSERT INTO items (id) VALUES (?)', ['later'])
    })
    // One round trip each for the statements that answer: none for the queued writes.
    expect(db.stats().roundTrips! - trips).to.equal(2)
    expect(seen).to.equal(0)
    expect(await failed).to.equal('DB_CONSTRAINT')
    await kept
    expect(await committed()).to.deep.equal(['later'])
  })

  it('keeps the groups of queued writers to themselves when a function that ran nothing follows them', async () => {
    await db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['taken']))
    const outcome = (p: Promise<unknown>): Promise<string> => p.then(
      () => 'ok',
      (e: DatabaseError) => e.code,
    )
    const insert = (id: string) => outcome(db.transaction((tx) => tx.write('INSERT INTO items (id) VALUES (?)', [id])))
    const writers = [insert('w1'), insert('taken'), insert('w3')]
    const nothing = outcome(db.transaction(() => 42))
    // A function whose write queued after its statement fails: it alone rolls back, not the no-op after it.
    const tail = outcome(
      db.transaction((tx) => {
        tx.run('INSERT INTO items (id) VALUES (?)', ['t1'])
        tx.write('INSERT INTO items (id) VALUES (?)', ['taken'])
      }),
    )
    const after = outcome(db.transaction(() => undefined))
    const last = insert('w5')
    expect(await Promise.all(writers)).to.deep.equal(['ok', 'DB_CONSTRAINT', 'ok'])
    expect([await nothing, await tail, await after, await last]).to.deep.equal(['ok', 'DB_CONSTRAINT', 'ok', 'ok'])
    expect(await committed()).to.deep.equal(['taken', 'w1', 'w3', 'w5'])
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

  it('answers the first row of many to get, and counts statements by text once asked (the costliest first)', async () => {
    await db.transaction((tx) => {
      for (const id of ['p', 'q', 'r']) tx.run('INSERT INTO items (id) VALUES (?)', [id])
    })
    expect(db.get<{ id: string }>('SELECT id FROM items ORDER BY seq')).to.deep.equal({ id: 'p' })
    db.statementTally()
    for (let i = 0; i < 3; i++) db.get('SELECT id FROM items WHERE id = ?', ['p'])
    await db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['s']))
    const tally = db.statementTally()
    expect(tally[0]).to.deep.equal({ sql: 'SELECT id FROM items WHERE id = $1', statements: 3, roundTrips: 3 })
    expect(tally.find((t) => t.sql.startsWith('INSERT INTO items'))).to.deep.include({ sql: 'INSERT INTO items (id) VALUES ($1) RETURNING seq AS parley_rowid', statements: 1 })
    expect(tally.map((t) => t.statements)).to.deep.equal([...tally.map((t) => t.statements)].sort((a, b) => b - a))
  })

  it('shows its engine, health and size', () => {
    const s = db.status()
    expect(s).to.include({ engine: 'postgres', healthy: true })
    expect(s.sizeBytes).to.be.greaterThan(0)
  })
})

/** A closed PostgreSQL engine refuses what a closed sql.js one does, with DB_CLOSED, and says it is not healthy. */
describe('PostgreSQL engine: once closed', () => {
  it('refuses transactions, reads and checkpoints, and closes once', async () => {
    const d = await testDatabase({ empty: true })
    try {
      const db = await PgDatabase.open({ url: d.url, migrations: [items] })
      await db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['kept']))
      const closing = db.close()
      expect(db.close()).to.equal(closing)
      expect(db.status()).to.include({ engine: 'postgres', healthy: false })
      await closing
      const code = (e: unknown) => (e as DatabaseError).code
      expect(await db.transaction(() => 1).catch(code)).to.equal('DB_CLOSED')
      expect(await db.checkpoint().catch(code)).to.equal('DB_CLOSED')
      expect(() => db.all('SELECT 1')).to.throw(DatabaseError, 'DB_CLOSED: the database is closed')
      expect(db.writesPaused).to.equal(false)
    } finally {
      await d.drop()
    }
  })
})

/**
 * The engine's limits, lowered here to see them in a second: a turn whose read is not answered in time fails whole
 * (nothing of it acknowledged or stored), a statement the server cancels is unavailable (503) not a SQL error, a
 * server that never answers the connection fails the start, migrations have no limit, and an old server is refused.
 */
describe('PostgreSQL engine: limits', () => {
  let url: string
  let drop: () => Promise<void>
  let db: PgDatabase
  // The server's own limit past the answer timeout, so that the bridge's gives up first; and the other way round.
  const timing = { statementTimeoutMs: 5000, answerTimeoutMs: 1000 }
  const tight = { statementTimeoutMs: 300, answerTimeoutMs: 1000 }

  before(async () => {
    const d = await testDatabase({ empty: true })
    url = d.url
    drop = d.drop
    db = await PgDatabase.open({ url, migrations: [items], timing })
  })
  after(async () => {
    await db?.close()
    await drop?.()
  })

  it('fails the whole turn when a read in it is not answered in time: its write is neither acknowledged nor stored', async () => {
    const write = db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['unanswered'])).catch((e: DatabaseError) => e)
    // In the same turn, after the write went to the server: longer than the answer timeout, and the server would fail it
    // afterwards.
    expect(() => db.all('SELECT 1 / (SELECT 0 FROM pg_sleep(1.5)) AS x')).to.throw(DatabaseError, /^DB_UNAVAILABLE: the database postgres:\/\/parley:\*\*\*@.* did not answer within 1 s/)
    const err = (await write) as DatabaseError
    expect(err).to.be.instanceOf(DatabaseError)
    expect(err.code).to.equal('DB_UNAVAILABLE')
    await db.whenWritable()
    await db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['later']))
    expect(db.all('SELECT id FROM items ORDER BY seq')).to.deep.equal([{ id: 'later' }])
  })

  it('answers a statement the server cancelled for its time as unavailable, naming the database, and stays up', async () => {
    // A database of its own: one member process per database (member-lock.ts).
    const own = await testDatabase({ empty: true })
    const limited = await PgDatabase.open({ url: own.url, migrations: [items], timing: tight })
    try {
      expect(() => limited.all('SELECT 1 AS x FROM (SELECT pg_sleep(0.6)) AS s')).to.throw(DatabaseError, /^DB_UNAVAILABLE: the database postgres:\/\/parley:\*\*\*@127\.0\.0\.1:\d+\/\w+ is unavailable: .*statement timeout \(SQLSTATE 57014\)/)
      expect(limited.status().healthy).to.equal(true)
      expect(limited.get('SELECT 1 AS one')).to.deep.equal({ one: 1 })
    } finally {
      await limited.close()
      await own.drop()
    }
  })

  it('runs migrations without the statement limit', async () => {
    const d = await testDatabase({ empty: true })
    const slow: Migration = { version: 1, name: 'slow', up: 'CREATE TABLE slow AS SELECT 1 AS x FROM pg_sleep(0.8)' }
    try {
      const migrated = await PgDatabase.open({ url: d.url, migrations: [slow], timing: { statementTimeoutMs: 300, answerTimeoutMs: 500 } })
      expect(migrated.all('SELECT x FROM slow')).to.deep.equal([{ x: 1 }])
      // The same statement outside the migrations is held to the limit.
      expect(() => migrated.all('SELECT 1 AS x FROM pg_sleep(0.8)')).to.throw(DatabaseError, /DB_UNAVAILABLE.*SQLSTATE 57014/)
      await migrated.close()
    } finally {
      await d.drop()
    }
  })

  it('fails the start when the server accepts the connection and never answers', async () => {
    const silent = net.createServer(() => {})
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
    const port = (silent.address() as net.AddressInfo).port
    try {
      const err = (await PgDatabase.open({ url: `postgres://u:secret@127.0.0.1:${port}/x`, migrations: [], timing: { connectTimeoutMs: 300 } }).catch((e: unknown) => e)) as DatabaseError
      expect(err).to.be.instanceOf(DatabaseError)
      expect(err.code).to.equal('DB_UNAVAILABLE')
      expect(err.message).to.contain(`postgres://u:***@127.0.0.1:${port}/x`).and.match(/did not answer within 0\.3 s/)
    } finally {
      silent.close()
    }
  })

  it(`refuses a server older than PostgreSQL ${MIN_SERVER_VERSION / 10000}, naming its version`, () => {
    const err = serverVersionRefusal(150008, '15.8', 'postgres://h/db')
    expect(err?.code).to.equal('DB_MIGRATION')
    expect(err?.message).to.equal(`DB_MIGRATION: the database postgres://h/db runs PostgreSQL 15.8; this node needs PostgreSQL ${MIN_SERVER_VERSION / 10000} or later`)
    expect(serverVersionRefusal(MIN_SERVER_VERSION, 'x', 'postgres://h/db')).to.equal(undefined)
    // The run's server is one this engine takes.
    expect(db.get<{ n: number }>("SELECT current_setting('server_version_num')::int AS n")!.n).to.be.at.least(MIN_SERVER_VERSION)
  })
})
