import { join } from 'node:path'
import { expect } from 'chai'
import { DatabaseError, type Migration } from '../../node/db/database.js'
import { PgDatabase } from '../../node/db/pg/pg-database.js'
import { startNode } from '../../node/node.js'
import { TempDirs } from '../support/db/helpers.js'
import { loneNodeConfig, loneNodeTls } from '../support/lone-node.js'
import { createDatabase, startPostgres, type PgServer } from '../support/postgres.js'
import { waitExit } from '../support/postgres-stop.js'

const items: Migration = { version: 1, name: 'items', up: 'CREATE TABLE items (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE)' }

/**
 * A member on PostgreSQL whose server goes away: writes are refused with DB_UNAVAILABLE (the API's 503) instead of
 * hanging, the member reconnects by itself once the server is back, and a SIGKILL of the server loses nothing that was
 * acknowledged and stores nothing twice. A server of the suite's own, since it is stopped and killed.
 */
describe('db: PostgreSQL going away and coming back', function () {
  const temp = new TempDirs()
  let server: PgServer
  let db: PgDatabase
  const logs: string[] = []
  /** Backends a test stopped (SIGSTOP): continued in the after hook whatever happened, so the server can stop. */
  const frozen: number[] = []
  const ids = (): string[] => db.all<{ id: string }>('SELECT id FROM items ORDER BY seq').map((r) => r.id)

  before(async () => {
    server = await startPostgres(await temp.make('parley-pg-availability-'))
    const d = await createDatabase(server)
    db = await PgDatabase.open({ url: d.url, migrations: [items], log: (l) => logs.push(l) })
  })
  after(async () => {
    for (const pid of frozen) {
      try {
        process.kill(pid, 'SIGCONT')
      } catch {
        // Already gone.
      }
    }
    await db?.close()
    await server?.stop()
    await temp.cleanup()
  })

  async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
    const end = Date.now() + ms
    while (!ok()) {
      if (Date.now() > end) throw new Error(`timed out waiting until ${what}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  }

  it('refuses writes and reads with DB_UNAVAILABLE naming the database while it is stopped, and resumes by itself', async () => {
    await db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['before']))
    await server.stop()
    await until('the member notices', () => !db.status().healthy)
    const status = db.status()
    expect(status.detail).to.contain(`127.0.0.1:${server.port}`).and.not.contain('parley-test')
    const err = (await db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['during'])).catch((e: unknown) => e)) as DatabaseError
    expect(err).to.be.instanceOf(DatabaseError)
    expect(err.code).to.equal('DB_UNAVAILABLE')
    expect(err.message).to.contain(`127.0.0.1:${server.port}`)
    expect(() => db.all('SELECT id FROM items')).to.throw(DatabaseError, /DB_UNAVAILABLE/)
    let writable = false
    const waiting = db.whenWritable().then(() => (writable = true))
    await new Promise((r) => setTimeout(r, 300))
    expect(writable, 'background loops wait rather than spin').to.equal(false)

    await server.restart()
    await waiting
    expect(db.status().healthy).to.equal(true)
    await db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['after']))
    expect(ids()).to.deep.equal(['before', 'after'])
    expect(logs.some((l) => /database: lost postgres:\/\/parley:\*\*\*@127\.0\.0\.1/.test(l))).to.equal(true)
    expect(logs.some((l) => /database: connected again/.test(l))).to.equal(true)
  })

  it('gives up on a hung server (its backend stopped) after the answer timeout, and carries on on a new connection once that one is gone', async () => {
    const d = await createDatabase(server)
    const hungLogs: string[] = []
    const hung = await PgDatabase.open({ url: d.url, migrations: [items], log: (l) => hungLogs.push(l), timing: { answerTimeoutMs: 1000 } })
    let pid = 0
    try {
      pid = hung.get<{ p: number }>('SELECT pg_backend_pid() AS p')!.p
      process.kill(pid, 'SIGSTOP')
      frozen.push(pid)
      const err = (await hung.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['frozen'])).catch((e: unknown) => e)) as DatabaseError
      expect(err).to.be.instanceOf(DatabaseError)
      expect(err.code).to.equal('DB_UNAVAILABLE')
      expect(err.message).to.contain(`127.0.0.1:${server.port}`).and.contain('did not answer within 1 s')
      expect(hungLogs.some((l) => /database: lost .*did not answer within 1 s/.test(l))).to.equal(true)
      // The frozen server process still holds the member's lock (node/db/pg/member-lock.ts): told to end, it cannot
      // yet, and until it has nothing is written on the new connection, so that no other process could write beside.
      await until('the member to wait for its previous connection', () => (hung.status().detail ?? '').includes(`waiting for the server to end this member's previous connection (server process ${pid})`))
      expect(hung.status().healthy).to.equal(false)
      process.kill(pid, 'SIGCONT')
      await waitExit(pid, 10_000)
      pid = 0
      await hung.whenWritable()
      await hung.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['after']))
      expect(hung.all('SELECT id FROM items ORDER BY seq')).to.deep.equal([{ id: 'after' }])
      expect(hung.get<{ n: number }>("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()")!.n).to.equal(1)
    } finally {
      await hung.close()
      // Continued, it finds its client gone and exits; the server's later restarts need its shared memory released.
      if (pid) {
        process.kill(pid, 'SIGCONT')
        await waitExit(pid, 10_000)
      }
    }
  })

  it('loses nothing acknowledged and stores nothing twice when the server is killed (SIGKILL) mid-stream', async () => {
    const acked: string[] = []
    const failed: string[] = []
    let stop = false
    // One writer, one transaction per turn, as requests arrive: each id is acknowledged only once its COMMIT returned.
    const writer = (async () => {
      for (let i = 0; !stop; i++) {
        const id = `k${i}`
        try {
          await db.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', [id]))
          acked.push(id)
        } catch (err) {
          expect((err as DatabaseError).code).to.equal('DB_UNAVAILABLE')
          failed.push(id)
          await db.whenWritable()
        }
      }
    })()
    await until('some writes are acknowledged', () => acked.length >= 50)
    await server.kill()
    await until('a write is refused', () => failed.length > 0)
    await server.restart()
    const n = (id: string | undefined): number => Number(id?.slice(1) ?? -1)
    await until('writes are acknowledged again', () => n(acked[acked.length - 1]) > n(failed[failed.length - 1]) && acked.length >= 100)
    stop = true
    await writer
    const stored = ids().filter((id) => id.startsWith('k'))
    expect(new Set(stored).size, 'no id twice').to.equal(stored.length)
    const missing = acked.filter((id) => !stored.includes(id))
    expect(missing, 'every acknowledged write is stored').to.deep.equal([])
    // A refused write may or may not have committed (its COMMIT's outcome was unknown), but it was never acknowledged.
    expect(stored.filter((id) => !acked.includes(id)).every((id) => failed.includes(id))).to.equal(true)
  })

  it("a member's API answers a write 503 naming the database while it is stopped, and 200 again once it is back", async () => {
    const root = await temp.make('parley-pg-node-')
    const d = await createDatabase(server)
    const cfg = await loneNodeConfig(join(root, 'data'), await loneNodeTls(root), { database: { type: 'postgres', url: d.url } })
    const node = await startNode(cfg, () => {})
    const post = (value: unknown): Promise<Response> =>
      fetch(`${node.api}/api/v1/namespaces/default/data`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value }) })
    const status = async (): Promise<{ healthy: boolean; database: { engine: string; healthy: boolean } }> => (await fetch(`${node.api}/api/v1/status`)).json() as never
    try {
      expect((await post({ n: 1 })).status).to.equal(200)
      expect((await status()).database).to.include({ engine: 'postgres', healthy: true })
      await server.stop()
      await until('the member notices', () => !node.db.status().healthy)
      const refused = await post({ n: 2 })
      expect(refused.status).to.equal(503)
      expect(((await refused.json()) as { error: string }).error).to.match(new RegExp(`^UNAVAILABLE: DB_UNAVAILABLE: the database postgres://parley:\\*\\*\\*@127\\.0\\.0\\.1:${server.port}/`))
      const down = await status()
      expect(down.healthy).to.equal(false)
      expect(down.database).to.include({ engine: 'postgres', healthy: false })
      await server.restart()
      await node.db.whenWritable()
      expect((await post({ n: 3 })).status).to.equal(200)
      // Beside the member's own identity claims, which it stores at start.
      const values = node.db.all<{ value: string }>('SELECT value FROM data ORDER BY seq').map((r) => JSON.parse(r.value) as { n?: number })
      expect(values.filter((v) => v.n !== undefined)).to.deep.equal([{ n: 1 }, { n: 3 }])
    } finally {
      await node.stop()
    }
  })
})
