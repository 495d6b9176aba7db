import { strict as assert } from 'node:assert'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { NodeConfigFile } from '../../../../node/config.js'
import { Database as SqljsDatabase } from '../../../../node/db/database.js'
import { CopyRefused, tableChecksums } from '../../../../node/db/move/copy.js'
import { moveMemberDatabase } from '../../../../node/commands/move-member.js'
import { PgDatabase } from '../../../../node/db/pg/pg-database.js'
import { migrations } from '../../../../node/db/schema/index.js'
import { writeMemberConfig } from '../../../support/member-config.js'
import { testDatabase } from '../../../support/postgres.js'
import { openTestDatabase, testSqljs } from '../../../support/repos.js'

async function sqljsMember(dir: string): Promise<string[]> {
  const db = await openTestDatabase(join(dir, 'data', 'db'), migrations, 'sqljs')
  await db.transaction((tx) => {
    for (let i = 0; i < 30; i++) tx.run('INSERT INTO node_state (key, value) VALUES (?, ?)', [`k${i}`, `välue ${i}`])
  })
  const sums = tableChecksums(db).map((t) => `${t.table} ${t.rows} ${t.checksum}`)
  await db.close()
  return sums
}

describe('node/commands/move-member: a stopped member to the other engine, config switched, old state kept', function () {
  this.timeout(120_000)
  let dir: string
  const cleanup: (() => Promise<void>)[] = []

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'parley-move-member-'))
    mkdirSync(join(dir, 'data', 'blobs'), { recursive: true })
    writeFileSync(join(dir, 'data', 'blobs', 'a-blob'), 'blob bytes')
  })
  afterEach(async () => {
    for (const f of cleanup.splice(0)) await f().catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  })

  it('moves to PostgreSQL and back, each time with the same rows, the config naming the engine and the old state renamed', async () => {
    const before = await sqljsMember(dir)
    const config = writeMemberConfig(dir)
    const d = await testDatabase({ prefix: 'move' })
    cleanup.push(d.drop)

    const there = await moveMemberDatabase({ sqljs: testSqljs, configFile: config, to: 'postgres', url: d.url, now: () => new Date('2026-11-29T10:00:00Z') })
    assert.equal(there.kept, join(dir, 'data', 'db.before-move-20261129T100000Z'))
    assert.ok(existsSync(join(there.kept, 'snapshot.sqlite')) || existsSync(join(there.kept, 'journal')))
    assert.ok(!existsSync(join(dir, 'data', 'db')))
    assert.equal(readFileSync(join(dir, 'data', 'blobs', 'a-blob'), 'utf8'), 'blob bytes')
    const written = JSON.parse(readFileSync(config, 'utf8')) as NodeConfigFile
    assert.deepEqual(written.database, { type: 'postgres', url: d.url })
    assert.equal(statSync(config).mode & 0o777, 0o600)
    const pg = await PgDatabase.open({ url: d.url, migrations })
    assert.deepEqual(tableChecksums(pg).map((t) => `${t.table} ${t.rows} ${t.checksum}`), before)
    await pg.close()

    const back = await moveMemberDatabase({ sqljs: testSqljs, configFile: config, to: 'sqljs' })
    assert.equal(back.kept, d.url.replace(/:[^:@/]*@/, '@'))
    assert.equal((JSON.parse(readFileSync(config, 'utf8')) as NodeConfigFile).database, undefined)
    const db = await openTestDatabase(join(dir, 'data', 'db'), migrations, 'sqljs')
    assert.deepEqual(tableChecksums(db).map((t) => `${t.table} ${t.rows} ${t.checksum}`), before)
    await db.close()
  })

  it('refuses a member that runs, on either engine, and changes nothing', async () => {
    await sqljsMember(dir)
    const config = writeMemberConfig(dir)
    const d = await testDatabase({ prefix: 'move' })
    cleanup.push(d.drop)
    const running = await SqljsDatabase.open({ dir: join(dir, 'data', 'db'), migrations, ...testSqljs })
    await assert.rejects(moveMemberDatabase({ sqljs: testSqljs, configFile: config, to: 'postgres', url: d.url }), /org1 is running .*: stop it before moving its state/)
    await running.close()
    assert.equal((JSON.parse(readFileSync(config, 'utf8')) as NodeConfigFile).database, undefined)
    assert.deepEqual(readdirSync(join(dir, 'data')).sort(), ['blobs', 'db'])

    const onPg = writeMemberConfig(dir, { type: 'postgres', url: d.url })
    rmSync(join(dir, 'data', 'db'), { recursive: true })
    const node = await PgDatabase.open({ url: d.url, migrations })
    cleanup.push(() => node.close())
    await assert.rejects(moveMemberDatabase({ sqljs: testSqljs, configFile: onPg, to: 'sqljs' }), /org1 is running \(DB_LOCKED: the database postgres:\/\/.* is in use: another process has this member database open: "parley \d+\.\d+@[^"]+" from 127\.0\.0\.1 \(server process \d+\); stop it first\): stop it before moving its state/)
    assert.ok(!existsSync(join(dir, 'data', 'db')))
  })

  it('refuses a move to the engine it is on, and to sql.js over an existing database folder', async () => {
    await sqljsMember(dir)
    await assert.rejects(moveMemberDatabase({ sqljs: testSqljs, configFile: writeMemberConfig(dir), to: 'sqljs' }), /org1 is already on sql\.js/)
    await assert.rejects(moveMemberDatabase({ sqljs: testSqljs, configFile: writeMemberConfig(dir, { type: 'postgres', url: 'postgres://u:p@127.0.0.1:1/x' }), to: 'sqljs' }), /data\/db already exists/)
    await assert.rejects(moveMemberDatabase({ sqljs: testSqljs, configFile: writeMemberConfig(dir), to: 'postgres' }), /needs the URL of its new database/)
    // The URL is checked as the member's config would check it.
    await assert.rejects(moveMemberDatabase({ sqljs: testSqljs, configFile: writeMemberConfig(dir), to: 'postgres', url: 'mysql://u:p@127.0.0.1/org1' }), (err: Error) => err instanceof CopyRefused && /^database.url must use postgres: or postgresql:/.test(err.message))
    assert.equal((JSON.parse(readFileSync(writeMemberConfig(dir), 'utf8')) as NodeConfigFile).database, undefined)
  })

  it('refuses a sql.js member that has no database yet: nothing to move', async () => {
    await assert.rejects(moveMemberDatabase({ sqljs: testSqljs, configFile: writeMemberConfig(dir), to: 'postgres', url: 'postgres://u:p@127.0.0.1:1/x' }), /org1 has no sql\.js database at .*data\/db: nothing to move/)
  })

  it('copies in pages of the size asked, says what it does, and names the kept folder by the time of the move', async () => {
    await sqljsMember(dir)
    const d = await testDatabase({ prefix: 'move' })
    cleanup.push(d.drop)
    const lines: string[] = []
    const moved = await moveMemberDatabase({ sqljs: testSqljs, configFile: writeMemberConfig(dir), to: 'postgres', url: d.url, pageRows: 7, log: (l) => lines.push(l) })
    assert.match(moved.kept, /data\/db\.before-move-\d{8}T\d{6}Z$/)
    assert.deepEqual(moved.previous, { type: 'sqljs' })
    assert.equal(moved.tables.find((t) => t.table === 'node_state')?.rows, 30)
    assert.deepEqual(lines.slice(0, 2), ['org1: opening its sql.js database', 'org1: opening the PostgreSQL database to copy into'])
    assert.match(lines.at(-1)!, /^org1: \d+ tables copied and checked \(\d+ rows\)$/)
  })
})
