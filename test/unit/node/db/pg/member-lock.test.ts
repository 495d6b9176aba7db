import { expect } from 'chai'
import { spawnSync } from 'node:child_process'
import { hostname } from 'node:os'
import pg from 'pg'
import { DatabaseError, type Migration } from '../../../../../node/db/database.js'
import { connectionName, heldByText, leftByDeadProcess, MEMBER_LOCK_CLASS, processAlive } from '../../../../../node/db/pg/member-lock.js'
import { PgDatabase } from '../../../../../node/db/pg/pg-database.js'
import { testDatabase } from '../../../../support/postgres.js'
import { waitUntil } from '../../../../support/wait.js'

const items: Migration = { version: 1, name: 'items', up: 'CREATE TABLE items (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE)' }

/** A plain connection to the database, as an operator's psql or a second process would have. */
async function connection(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  return c
}

/** The server processes holding a member lock on the database `c` is connected to. */
async function holders(c: pg.Client): Promise<number[]> {
  const r = await c.query(
    "SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::oid AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    [MEMBER_LOCK_CLASS],
  )
  return r.rows.map((row: { pid: number }) => row.pid)
}

/**
 * One member process per PostgreSQL database: its connection holds an advisory lock (node/db/pg/member-lock.ts), so a
 * second process started on the same database (the member twice, or two configs naming one URL) is refused at start,
 * and a member whose database was taken over while it was disconnected writes nothing more.
 */
describe('PostgreSQL engine: one member process per database', function () {
  this.timeout(60_000)
  const cleanup: (() => Promise<unknown>)[] = []
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f().catch(() => {})
  })

  it('refuses a second open of a database a member has open, naming the holder, and lets it open once that one closed', async () => {
    const d = await testDatabase({ empty: true })
    cleanup.push(d.drop)
    const first = await PgDatabase.open({ url: d.url, migrations: [items] })
    cleanup.push(() => first.close())
    const backend = first.get<{ p: number }>('SELECT pg_backend_pid() AS p')!.p
    const err = (await PgDatabase.open({ url: d.url, migrations: [items] }).catch((e: unknown) => e)) as DatabaseError
    expect(err).to.be.instanceOf(DatabaseError)
    expect(err.code).to.equal('DB_LOCKED')
    expect(err.message).to.match(new RegExp(`^DB_LOCKED: the database postgres://parley:\\*\\*\\*@127\\.0\\.0\\.1:\\d+/\\w+ is in use: another process has this member database open: "parley ${process.pid}\\.\\d+@[^"]+" from 127\\.0\\.0\\.1 \\(server process ${backend}\\); stop it first$`))
    // The first goes on as it was.
    await first.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['still mine']))
    await first.close()
    const second = await PgDatabase.open({ url: d.url, migrations: [items] })
    cleanup.push(() => second.close())
    expect(second.all('SELECT id FROM items')).to.deep.equal([{ id: 'still mine' }])
  })

  it('keys the lock by schema: members on two schemas of one database both run', async () => {
    const d = await testDatabase({ empty: true })
    cleanup.push(d.drop)
    const admin = await connection(d.url)
    cleanup.push(() => admin.end())
    await admin.query('CREATE SCHEMA m1; CREATE SCHEMA m2')
    const inSchema = (schema: string): string => `${d.url}?options=${encodeURIComponent(`-c search_path=${schema}`)}`
    const a = await PgDatabase.open({ url: inSchema('m1'), migrations: [items] })
    cleanup.push(() => a.close())
    const b = await PgDatabase.open({ url: inSchema('m2'), migrations: [items] })
    cleanup.push(() => b.close())
    await a.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['in m1']))
    expect(b.all('SELECT id FROM items')).to.deep.equal([])
    expect((await holders(admin)).length).to.equal(2)
    const again = (await PgDatabase.open({ url: inSchema('m1'), migrations: [items] }).catch((e: unknown) => e)) as DatabaseError
    expect(again.code).to.equal('DB_LOCKED')
  })

  it('takes over the lock of a process of this host that died (its server process had not seen it yet)', async () => {
    const d = await testDatabase({ empty: true })
    cleanup.push(d.drop)
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!
    const leftover = new pg.Client({ connectionString: d.url, application_name: connectionName(dead, 3, hostname()) })
    leftover.on('error', () => {})
    await leftover.connect()
    cleanup.push(() => leftover.end())
    const schemaKey = (await leftover.query("SELECT hashtext(coalesce(current_schema(), '')) & 2147483647 AS k")).rows[0].k as number
    await leftover.query('SELECT pg_advisory_lock($1, $2)', [MEMBER_LOCK_CLASS, schemaKey])
    const member = await PgDatabase.open({ url: d.url, migrations: [items] })
    cleanup.push(() => member.close())
    expect(member.get<{ n: number }>("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()")!.n).to.equal(1)
    // A live process's lock is not taken: this one's own, under another session's name, refuses the next open.
    const live = new pg.Client({ connectionString: d.url, application_name: connectionName(process.pid, 999_999, hostname()) })
    await live.connect()
    cleanup.push(() => live.end())
    await member.close()
    await live.query('SELECT pg_advisory_lock($1, $2)', [MEMBER_LOCK_CLASS, schemaKey])
    const refused = (await PgDatabase.open({ url: d.url, migrations: [items] }).catch((e: unknown) => e)) as DatabaseError
    expect(refused.code).to.equal('DB_LOCKED')
  })

  it('writes nothing more once another process took the database over while it was disconnected, even after that one left', async () => {
    const d = await testDatabase({ empty: true })
    cleanup.push(d.drop)
    const member = await PgDatabase.open({ url: d.url, migrations: [items] })
    cleanup.push(() => member.close())
    const backend = member.get<{ p: number }>('SELECT pg_backend_pid() AS p')!.p
    const schemaKey = member.get<{ k: number }>("SELECT hashtext(coalesce(current_schema(), '')) & 2147483647 AS k")!.k
    const intruder = await connection(d.url)
    cleanup.push(() => intruder.end())
    // The member's connection ends; the intruder waits for the lock, which it gets as that backend exits, before the
    // member has even seen its connection go.
    const taken = intruder.query('SELECT pg_advisory_lock($1, $2)', [MEMBER_LOCK_CLASS, schemaKey])
    const admin = await connection(d.url)
    cleanup.push(() => admin.end())
    await waitUntil('the intruder to wait for the lock', async () => (await admin.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")).rowCount === 1)
    await admin.query('SELECT pg_terminate_backend($1)', [backend])
    await taken
    await waitUntil('the member to see its database taken', () => /another process has this member database open/.test(member.status().detail ?? ''), { timeoutMs: 20_000 })
    expect(member.status().healthy).to.equal(false)
    const refused = (await member.transaction((tx) => tx.run('INSERT INTO items (id) VALUES (?)', ['late'])).catch((e: unknown) => e)) as DatabaseError
    expect(refused.code).to.equal('DB_UNAVAILABLE')
    await intruder.query('SELECT pg_advisory_unlock($1, $2)', [MEMBER_LOCK_CLASS, schemaKey])
    await new Promise((r) => setTimeout(r, 1500))
    expect(member.status().healthy, 'it does not take the database back: its state may be stale').to.equal(false)
    expect(await holders(intruder)).to.deep.equal([])
    expect((await intruder.query('SELECT id FROM items')).rows).to.deep.equal([])
  })
})

describe('PostgreSQL member lock: who holds it', () => {
  it('names a connection by process, session and host, within the 63 bytes PostgreSQL keeps', () => {
    expect(connectionName(4242, 7, 'vm')).to.equal('parley 4242.7@vm')
    expect(connectionName(4242, 7, 'h'.repeat(100))).to.have.length(63)
  })

  it('takes a holder for dead only when it names a process of this host that is gone', () => {
    const none = (): boolean => false
    expect(leftByDeadProcess('parley 4242.7@vm', 'vm', none)).to.equal(true)
    expect(leftByDeadProcess('parley 4242.7@vm', 'other-host', none), 'another host: its processes are not seen from here').to.equal(false)
    expect(leftByDeadProcess('parley 4242.7@vm', 'vm', () => true), 'alive').to.equal(false)
    expect(leftByDeadProcess('psql', 'vm', none), 'not a member').to.equal(false)
    const long = 'h'.repeat(100)
    expect(leftByDeadProcess(connectionName(4242, 7, long), long, none), 'a host name cut short as the name was').to.equal(true)
    expect(processAlive(process.pid)).to.equal(true)
    expect(processAlive(spawnSync(process.execPath, ['-e', '0']).pid!)).to.equal(false)
  })

  it('says who holds it, or that something does', () => {
    expect(heldByText({ pid: 12, applicationName: 'parley 1.2@vm', client: '10.0.0.5' })).to.equal(
      'another process has this member database open: "parley 1.2@vm" from 10.0.0.5 (server process 12); stop it first',
    )
    expect(heldByText({ pid: 12, applicationName: '', client: 'a local socket' })).to.equal(
      'another process has this member database open: a connection from a local socket (server process 12); stop it first',
    )
    expect(heldByText(undefined)).to.equal('another connection holds this member database (its Parley lock)')
  })
})
