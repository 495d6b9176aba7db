import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { mkdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { Database, DatabaseError, type Tx } from '../../node/db/database.js'
import { crashMigrations } from '../support/db/fixtures/crash-schema.js'
import { CrashChildren, TempDirs, itemsMigration, logCollector, openedDatabases } from '../support/db/helpers.js'
import { journalRecords, occurrences } from '../support/db/journal.js'

function insert(tx: Tx, name: string): number {
  return tx.run('INSERT INTO items (name) VALUES (?)', [name]).lastInsertRowid
}

function names(db: Database): string[] {
  return db.all<{ name: string }>('SELECT name FROM items ORDER BY id').map((r) => r.name)
}

function reason(r: PromiseSettledResult<unknown>): Error {
  expect(r.status).to.equal('rejected')
  return (r as PromiseRejectedResult).reason as Error
}

describe('db: the transactions of one tick share a SQL transaction and a journal record', function () {
  const temp = new TempDirs()
  const { open: openDb, closeAll } = openedDatabases()
  const children = new CrashChildren()
  afterEach(closeAll)
  after(async function () {
    children.killAll()
    await temp.cleanup()
  })

  it('commits the transactions of a tick as one record under one seq, each resolving with its own result', async function () {
    const dir = await temp.make()
    const db = await openDb(dir)
    await db.transaction((tx) => insert(tx, 'old'))
    const before = db.stats()
    const recordsBefore = (await journalRecords(dir)).length

    const inserts = ['a', 'b', 'c'].map((n) => db.transaction((tx) => tx.run('INSERT INTO items (name) VALUES (?)', [n])))
    const update = db.transaction((tx) => tx.run('UPDATE items SET data = ? WHERE name IN (?, ?)', [new Uint8Array([1]), 'a', 'old']))
    const readOnly = db.transaction((tx) => tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM items')?.n)
    expect(db.stats().lastSeq, 'sealed only at the end of the tick').to.equal(before.lastSeq)

    expect(await Promise.all(inserts)).to.deep.equal([
      { changes: 1, lastInsertRowid: 2 },
      { changes: 1, lastInsertRowid: 3 },
      { changes: 1, lastInsertRowid: 4 },
    ])
    expect(await update).to.deep.equal({ changes: 2, lastInsertRowid: 0 })
    expect(await readOnly).to.equal(4)
    const after = db.stats()
    expect(after.lastSeq).to.equal(before.lastSeq + 1)
    expect(after.durableSeq).to.equal(after.lastSeq)
    expect(after.flushes).to.equal(before.flushes + 1)

    const records = await journalRecords(dir)
    expect(records.length).to.equal(recordsBefore + 1)
    const last = records.at(-1)
    expect(last?.seq).to.equal(after.lastSeq)
    expect(last?.ops.map((op) => (op.kind === 'statement' ? op.params : op.sql))).to.deep.equal([['a'], ['b'], ['c'], [new Uint8Array([1]), 'a', 'old']])
  })

  it('rolls back only the failing transactions of a tick, which leave no trace after a crash', async function () {
    const dir = await temp.make()
    const db = await openDb(dir)
    // First used by a transaction that fails: its definition must go with it, and the next use define it again.
    const fresh = 'INSERT INTO items (name, data) VALUES (?, ?)'
    const results = await Promise.allSettled([
      db.transaction((tx) => insert(tx, 'a')),
      db.transaction((tx) => {
        tx.run(fresh, ['b', null])
        throw new Error('b fails')
      }),
      db.transaction((tx) => {
        insert(tx, 'c')
        try {
          insert(tx, 'a')
        } catch {
          // swallowed: the transaction still rolls back
        }
      }),
      db.transaction((tx) => tx.run(fresh, ['d', null]).lastInsertRowid),
    ])
    expect(results[0]).to.deep.equal({ status: 'fulfilled', value: 1 })
    expect(reason(results[1] as PromiseSettledResult<unknown>).message).to.equal('b fails')
    expect((reason(results[2] as PromiseSettledResult<unknown>) as DatabaseError).code).to.equal('DB_CONSTRAINT')
    expect(results[3]).to.deep.equal({ status: 'fulfilled', value: 2 })
    expect(names(db)).to.deep.equal(['a', 'd'])
    // A later tick refers to the name the surviving transaction defined.
    await db.transaction((tx) => tx.run(fresh, ['e', null]))
    expect(await occurrences(dir, fresh)).to.equal(1)

    const image = await temp.crashImage(dir)
    const reopened = await openDb(image)
    expect(names(reopened)).to.deep.equal(['a', 'd', 'e'])
    expect(reopened.stats().lastSeq).to.equal(db.stats().lastSeq)
  })

  it('lets reads during the tick see the writes of its earlier transactions, and not those of failed ones', async function () {
    const db = await openDb(await temp.make())
    await db.transaction((tx) => insert(tx, 'durable'))
    const a = db.transaction((tx) => insert(tx, 'a'))
    // Committed at the end of the tick and durable later, yet visible now (see node/db/README.md).
    expect(names(db)).to.deep.equal(['durable', 'a'])
    const b = db
      .transaction((tx) => {
        insert(tx, 'b')
        throw new Error('b fails')
      })
      .catch((e: unknown) => e)
    expect(names(db)).to.deep.equal(['durable', 'a'])
    const seen = db.transaction((tx) => tx.all<{ name: string }>('SELECT name FROM items ORDER BY id').map((r) => r.name))
    const lastSeqInTick = db.stats().lastSeq
    expect(await seen).to.deep.equal(['durable', 'a'])
    // A read that saw a write resolves only once that write is durable.
    expect(db.stats().durableSeq).to.equal(lastSeqInTick + 1)
    expect(await a).to.equal(2)
    expect(await b).to.have.property('message', 'b fails')
  })

  it('keeps the other transactions of a tick when a statement rolls back the whole SQL transaction (OR ROLLBACK)', async function () {
    const dir = await temp.make()
    const db = await openDb(dir)
    const a = db.transaction((tx) => insert(tx, 'a'))
    const b = db.transaction((tx) => {
      insert(tx, 'b')
      tx.run('INSERT OR ROLLBACK INTO items (name) VALUES (?)', ['a'])
    })
    // SQLite undid the whole tick; the engine has already put back what `a` wrote.
    expect(names(db)).to.deep.equal(['a'])
    const c = db.transaction((tx) => insert(tx, 'c'))
    const results = await Promise.allSettled([a, b, c])
    expect(results[0]).to.deep.equal({ status: 'fulfilled', value: 1 })
    expect((reason(results[1] as PromiseSettledResult<unknown>) as DatabaseError).code).to.equal('DB_CONSTRAINT')
    expect(results[2]).to.deep.equal({ status: 'fulfilled', value: 2 })
    const reopened = await openDb(await temp.crashImage(dir))
    expect(names(reopened)).to.deep.equal(['a', 'c'])
  })

  it('seals an open tick before a checkpoint rotates the journal, and starts the next journal with its own names', async function () {
    const dir = await temp.make()
    const db = await openDb(dir)
    const sql = 'INSERT INTO items (id, name) VALUES (?, ?)'
    const put = (id: number): Promise<unknown> => db.transaction((tx) => tx.run(sql, [id, `item-${id}`]))
    await put(1)
    const busy = [2, 3, 4].map(put)
    const checkpoint = db.checkpoint()
    busy.push(put(5), put(6))
    await nextTurn()
    // The journal has been rotated or is being rotated; these go to the next journal.
    busy.push(put(7), put(8))
    await Promise.all([checkpoint, ...busy])
    busy.push(put(9))
    await Promise.all(busy)

    const stats = db.stats()
    expect(stats.checkpoints).to.equal(1)
    const records = await journalRecords(dir)
    expect(records.length).to.be.greaterThan(0)
    // The tick the rotation sealed went to the sealed journal, now in the snapshot; the new journal starts after it.
    const firstInJournal = records[0]?.seq ?? 0
    expect(firstInJournal).to.equal(4)
    expect(records.at(-1)?.seq).to.equal(stats.lastSeq)
    expect(await occurrences(dir, sql)).to.equal(1)

    const reopened = await openDb(await temp.crashImage(dir))
    expect(reopened.all<{ id: number }>('SELECT id FROM items ORDER BY id').map((r) => r.id)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9])
  })

  it('keeps the journals replayable when the snapshot build fails after the rotation, and retries it', async function () {
    const dir = await temp.make()
    const { lines, log } = logCollector()
    const db = await openDb(dir, { log })
    const sql = 'INSERT INTO items (id, name) VALUES (?, ?)'
    const put = (id: number): Promise<unknown> => db.transaction((tx) => tx.run(sql, [id, `item-${id}`]))
    await put(1)
    // A directory where the snapshot's temporary file goes makes the worker's snapshot write fail.
    await mkdir(join(dir, 'snapshot.tmp'))
    const busy = [put(2), put(3)]
    const checkpoint = db.checkpoint().then(
      () => undefined,
      (e: unknown) => e,
    )
    await nextTurn()
    // Sealed after the rotation started: it goes to the new journal, which names statements afresh.
    busy.push(put(4))
    expect(await checkpoint).to.be.instanceOf(Error)
    await Promise.all(busy)
    await nextTurn()
    busy.push(put(5))
    await Promise.all(busy)
    expect(db.stats().checkpoints).to.equal(0)
    expect(lines.join('\n')).to.match(/building the snapshot failed, keeping journal\.sealed/)
    // Nothing is lost: the sealed journal stays next to the new one, each with its own definition.
    expect(await occurrences(dir, sql)).to.equal(1)
    expect((await journalRecords(dir, 'journal.sealed')).at(-1)?.ops).to.have.length(2)

    const image = await temp.crashImage(dir)
    await rm(join(image, 'snapshot.tmp'), { recursive: true })
    const reopened = await openDb(image)
    expect(reopened.all<{ id: number }>('SELECT id FROM items ORDER BY id').map((r) => r.id)).to.deep.equal([1, 2, 3, 4, 5])

    // Once the cause is gone, the next checkpoint folds the sealed journal first, then the current one.
    await rm(join(dir, 'snapshot.tmp'), { recursive: true })
    await db.checkpoint()
    expect(db.stats().checkpoints).to.equal(2)
    expect(existsSync(join(dir, 'journal.sealed'))).to.equal(false)
    expect(db.stats().journalBytes).to.equal(8)
  })

  it('seals an open tick at close, called from outside or from inside a transaction function', async function () {
    const dir = await temp.make()
    const db = await Database.open({ dir, migrations: [itemsMigration] })
    const pending = [db.transaction((tx) => insert(tx, 'a')), db.transaction((tx) => insert(tx, 'b'))]
    const closing = db.close()
    expect(await Promise.all(pending)).to.deep.equal([1, 2])
    await closing

    const again = await Database.open({ dir, migrations: [itemsMigration] })
    let closed: Promise<void> | undefined
    const inside = again.transaction((tx) => {
      const id = insert(tx, 'c')
      closed = again.close()
      return id
    })
    expect((await again.transaction((tx) => insert(tx, 'refused')).catch((e: unknown) => e)) as DatabaseError).to.have.property('code', 'DB_CLOSED')
    expect(await inside).to.equal(3)
    await closed
    const last = await openDb(dir)
    expect(names(last)).to.deep.equal(['a', 'b', 'c'])
  })

  it('keeps a failing migration atomic: none of its statements survive, in memory or in the journal', async function () {
    const dir = await temp.make()
    const bad = { version: 2, name: 'half', up: 'CREATE TABLE half (x INTEGER); INSERT INTO missing VALUES (1);' }
    const err = await Database.open({ dir, migrations: [itemsMigration, bad] }).catch((e: unknown) => e)
    expect((err as DatabaseError).code).to.equal('DB_MIGRATION')
    const db = await openDb(await temp.crashImage(dir))
    expect(db.get("SELECT name FROM sqlite_master WHERE name = 'half'")).to.equal(undefined)
    expect(db.all('SELECT version FROM schema_migrations')).to.deep.equal([{ version: 1 }])
  })

  it('starts a new record when the tick record grows past its bound', async function () {
    const db = await openDb(await temp.make())
    const blob = new Uint8Array(3 * 1024 * 1024)
    const before = db.stats().lastSeq
    const ids = await Promise.all(
      Array.from({ length: 8 }, (_, i) => db.transaction((tx) => tx.run('INSERT INTO items (name, data) VALUES (?, ?)', [`big-${i}`, blob]).lastInsertRowid)),
    )
    expect(ids).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8])
    // 16 MiB per record: six 3 MiB transactions fill the first, the seventh starts the second.
    expect(db.stats().lastSeq).to.equal(before + 2)
  })

  it('reports the database size and the last checkpoint’s cost', async function () {
    const dir = await temp.make()
    const db = await openDb(dir)
    const empty = db.stats()
    expect(empty.lastCheckpointMs).to.equal(null)
    expect(empty.lastSnapshotBytes).to.equal(null)
    expect(empty.databaseBytes).to.be.greaterThan(0)
    await db.transaction((tx) => {
      for (let i = 0; i < 200; i++) tx.run('INSERT INTO items (name, data) VALUES (?, ?)', [`n${i}`, new Uint8Array(1000)])
    })
    const page = db.get<{ page_size: number }>('PRAGMA page_size')?.page_size ?? 0
    const count = db.get<{ page_count: number }>('PRAGMA page_count')?.page_count ?? 0
    expect(db.stats().databaseBytes).to.equal(page * count).and.be.greaterThan(empty.databaseBytes + 200_000)
    await db.checkpoint()
    const s = db.stats()
    expect(s.lastSnapshotBytes).to.equal((await stat(join(dir, 'snapshot.sqlite'))).size)
    expect(s.lastCheckpointMs).to.be.a('number').and.at.least(s.lastCheckpointExportMs ?? Infinity)
  })

  it('keeps every acknowledged transaction of a tick group, and no failed one, across SIGKILL', async function () {
    this.timeout(60_000)
    const dir = await temp.make()
    const GROUP = 10
    const FAILING = 3
    for (let round = 0; round < 2; round++) {
      const { acked, nacked } = await runAndKill(dir, 300)
      const db = await Database.open({ dir, migrations: crashMigrations })
      try {
        const ids = db.all<{ id: number }>('SELECT id FROM items ORDER BY id').map((r) => r.id)
        const present = new Set(ids)
        expect(acked.filter((id) => !present.has(id)), 'acknowledged ids missing after SIGKILL').to.deep.equal([])
        expect(nacked.filter((id) => present.has(id)), 'failed transactions present after SIGKILL').to.deep.equal([])
        // One record per group: each group is on disk whole (but for its failed one) or not at all.
        const groups = new Map<number, number>()
        for (const id of ids) groups.set(Math.floor(id / GROUP), (groups.get(Math.floor(id / GROUP)) ?? 0) + 1)
        for (const [g, n] of groups) expect(n, `group ${g}`).to.equal(GROUP - 1)
        expect(ids.some((id) => id % GROUP === FAILING)).to.equal(false)
        console.log(`      round ${round + 1}: ${acked.length} acks, ${nacked.length} failed as intended, ${ids.length} rows after reopen`)
      } finally {
        await db.close()
      }
    }

    async function runAndKill(dbDir: string, killAfterAcks: number): Promise<{ acked: number[]; nacked: number[] }> {
      const nacked: number[] = []
      const acked = await children.run('test/support/db/fixtures/tick-groups.ts', [dbDir], {
        line: (line) => {
          if (line.startsWith('nack ')) nacked.push(Number(line.slice(5)))
        },
        output: (child) => {
          if (child.acked.length >= killAfterAcks) child.kill()
        },
      })
      return { acked, nacked }
    }
  })
})
