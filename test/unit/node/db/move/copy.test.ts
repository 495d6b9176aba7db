import { strict as assert } from 'node:assert'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Database } from '../../../../../node/db/engine.js'
import { copyDatabase, CopyRefused, tableChecksums } from '../../../../../node/db/move/copy.js'
import { PgDatabase } from '../../../../../node/db/pg/pg-database.js'
import { migrations } from '../../../../../node/db/schema/index.js'
import { testDatabase } from '../../../../support/postgres.js'
import { openTestDatabase } from '../../../../support/repos.js'

/** A member's state in miniature: every kind of key, a trigger's table, a sequence past its largest key, non-ASCII text. */
async function fill(db: Database, messages: number): Promise<void> {
  await db.transaction((tx) => {
    tx.run('INSERT INTO node_state (key, value) VALUES (?, ?), (?, ?)', ['identity', '{"org":"örg1 ✓"}', 'empty', ''])
    for (let i = 1; i <= messages; i++) {
      tx.run(
        'INSERT INTO messages (id, namespace, type, txtype, author, key, created, created_key, topics, datahash, hash, data, state, local, confirmed, pins) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        [`m-${i}`, 'default', 'broadcast', 'batch_pin', 'did:firefly:org/org1', '0xabc', `2026-01-01T00:00:${String(i % 60).padStart(2, '0')}Z`, `k${i}`, '["t"]', 'dh', `h${i}`, `[{"value":"ünï ${i}"}]`, 'confirmed', i % 2, i % 3 === 0 ? null : 'c', null],
      )
    }
    tx.run("INSERT INTO batches (id, type, namespace, author, key, created, hash, manifest, tx_id, state, local) VALUES ('b1', 'broadcast', 'default', 'a', 'k', 't', 'bh', '{}', 'tx', 'confirmed', 1)")
    // held = 0 although the batch is there: the trigger on batches must not rewrite it during the copy.
    tx.run("INSERT INTO pins (batch_id, batch_hash, idx, hash, masked, signer, event_id, dispatched, held) VALUES ('b1', 'bh', 0, 'p0', 0, 's', 'e0', 1, 0)")
    tx.run("INSERT INTO group_members (grp, idx, identity, node) VALUES ('g', 1, 'i1', 'n1'), ('g', 0, 'i0', 'n0'), ('a', 5, 'i5', 'n5')")
    // The newest messages are gone: a copy must not hand their numbers out again.
    tx.run('DELETE FROM messages WHERE seq > ?', [messages - 3])
  })
}

describe('node/db/move/copy: a whole database from one engine to the other', function () {
  this.timeout(120_000)
  let tmp: string
  const open: Database[] = []
  const drops: (() => Promise<void>)[] = []

  const pg = async (): Promise<PgDatabase> => {
    const d = await testDatabase({ prefix: 'move' })
    drops.push(d.drop)
    const db = await PgDatabase.open({ url: d.url, migrations })
    open.push(db)
    return db
  }
  const sqljs = async (name: string): Promise<Database> => {
    const db = await openTestDatabase(join(tmp, name), migrations, 'sqljs')
    open.push(db)
    return db
  }

  beforeEach(() => {
    tmp = mkdtempSync(join(tmpdir(), 'parley-move-'))
  })
  afterEach(async () => {
    for (const db of open.splice(0)) await db.close().catch(() => {})
    for (const drop of drops.splice(0)) await drop()
    rmSync(tmp, { recursive: true, force: true })
  })

  it('copies sql.js to PostgreSQL and back row for row, in pages, and new rows continue after the old ones', async () => {
    const a = await sqljs('a')
    await fill(a, 40)
    const before = tableChecksums(a)
    const b = await pg()
    const pages: number[] = []
    const copied = await copyDatabase(a, b, { pageRows: 7, progress: (t, n) => t === 'messages' && pages.push(n) })
    assert.deepEqual(pages, [7, 14, 21, 28, 35, 37])
    assert.deepEqual(tableChecksums(b, 5), before)
    assert.equal(copied.find((t) => t.table === 'messages')?.rows, 37)
    assert.equal(copied.find((t) => t.table === 'messages')?.sequence, 40)
    assert.equal(b.get<{ held: number }>("SELECT held FROM pins WHERE hash = 'p0'")?.held, 0)

    const c = await sqljs('c')
    await copyDatabase(b, c, { pageRows: 3 })
    assert.deepEqual(tableChecksums(c), before)
    for (const db of [b, c]) {
      const seq = await db.transaction((tx) =>
        tx.get<{ seq: number }>(
          "INSERT INTO messages (id, namespace, type, txtype, author, key, created, created_key, topics, datahash, hash, data, state, local) VALUES ('new', 'default', 'broadcast', 'batch_pin', 'a', 'k', 't', 'ck', '[]', 'd', 'h', '[]', 'sent', 1) RETURNING seq",
        ),
      )
      assert.equal(seq?.seq, 41, db.dialect.engine)
    }
  })

  it('refuses a target that holds any row, and leaves it as it was', async () => {
    const a = await sqljs('a')
    await fill(a, 5)
    const b = await pg()
    await b.transaction((tx) => tx.run("INSERT INTO node_state (key, value) VALUES ('x', 'y')"))
    await assert.rejects(copyDatabase(a, b), (err: Error) => err instanceof CopyRefused && /not empty \(table node_state has rows\)/.test(err.message))
    assert.deepEqual(b.all('SELECT key FROM node_state'), [{ key: 'x' }])
    assert.equal(b.get<{ n: number }>('SELECT count(*) AS n FROM messages')?.n, 0)
  })

  it('refuses databases at different schema versions', async () => {
    const a = await sqljs('a')
    const d = await testDatabase({ prefix: 'move', empty: true })
    drops.push(d.drop)
    const older = await PgDatabase.open({ url: d.url, migrations: migrations.slice(0, -1) })
    const last = migrations[migrations.length - 1]!.version
    open.push(older)
    await assert.rejects(copyDatabase(a, older), (err: Error) => err instanceof CopyRefused && new RegExp(`schema versions differ: source 1,.*,${last}, target 1,.*,${last - 1};`).test(err.message))
  })

  it('refuses tables that differ, have no primary key or a name it would have to quote, before writing anything', async () => {
    const refusal = async (source: (tx: Parameters<Parameters<Database['transaction']>[0]>[0]) => void, target: typeof source): Promise<string> => {
      const a = await sqljs(`a-${open.length}`)
      const b = await sqljs(`b-${open.length}`)
      await a.transaction(source)
      await b.transaction(target)
      const err = await copyDatabase(a, b).then(() => undefined, (e: unknown) => e)
      assert.ok(err instanceof CopyRefused, String(err))
      assert.equal(b.get<{ n: number }>('SELECT count(*) AS n FROM messages')?.n, 0)
      return err.message
    }
    const none = () => {}
    assert.equal(await refusal(none, (tx) => tx.run('CREATE TABLE extra (id TEXT PRIMARY KEY)')), 'the two databases have different tables (only in the source: none; only in the target: extra)')
    assert.equal(await refusal((tx) => tx.run('CREATE TABLE extra (id TEXT PRIMARY KEY)'), none), 'the two databases have different tables (only in the source: extra; only in the target: none)')
    assert.equal(
      await refusal(none, (tx) => tx.run('ALTER TABLE node_state ADD COLUMN note TEXT')),
      'table node_state has columns (key, value) in the source but (key, value, note) in the target',
    )
    const both = (sql: string) => (tx: Parameters<Parameters<Database['transaction']>[0]>[0]) => tx.run(sql)
    assert.equal(await refusal(both('CREATE TABLE loose (a TEXT)'), both('CREATE TABLE loose (a TEXT)')), 'table loose has no primary key: it cannot be copied in key order')
    const odd = 'CREATE TABLE "odd name" (id TEXT PRIMARY KEY)'
    assert.equal(await refusal(both(odd), both(odd)), 'the name "odd name" in table odd name is not a plain identifier')
  })

  it('answers the same row counts and checksums for a database as for its copy', async () => {
    const a = await sqljs('a')
    await fill(a, 7)
    const b = await sqljs('b')
    const copies = await copyDatabase(a, b, { pageRows: 2 })
    assert.deepEqual(tableChecksums(b, 3), copies.map(({ sequence: _, ...c }) => c))
    assert.equal(copies.find((c) => c.table === 'messages')?.rows, 4)
  })
})
