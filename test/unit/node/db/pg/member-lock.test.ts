import { expect } from 'chai'
import { hostname } from 'node:os'
import pg from 'pg'
import { DatabaseError, type Migration } from '../../../../../node/db/database.js'
import { connectionName, heldByText, MEMBER_LOCK_CLASS, settleMemberLock, withoutApplicationName, SCHEMA_KEY_SQL, type Backend, type Claim, type LockHolder, type LockSettling } from '../../../../../node/db/pg/member-lock.js'
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

/** The member lock's second key for the schema `c` is on. */
async function schemaKeyOf(c: pg.Client): Promise<number> {
  return (await c.query(SCHEMA_KEY_SQL)).rows[0].k as number
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
    const started = Date.now()
    const err = (await PgDatabase.open({ url: d.url, migrations: [items], timing: { lockWaitMs: 600 } }).catch((e: unknown) => e)) as DatabaseError
    expect(Date.now() - started, 'it waited for the holder to let go first').to.be.at.least(600)
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
    const again = (await PgDatabase.open({ url: inSchema('m1'), migrations: [items], timing: { lockWaitMs: 0 } }).catch((e: unknown) => e)) as DatabaseError
    expect(again.code).to.equal('DB_LOCKED')
  })

  it('waits, on a first open, for a holder that lets go (a member restarted while its server process finished a statement)', async () => {
    const d = await testDatabase({ empty: true })
    cleanup.push(d.drop)
    const before = await connection(d.url)
    cleanup.push(() => before.end())
    const schemaKey = await schemaKeyOf(before)
    await before.query('SELECT pg_advisory_lock($1, $2)', [MEMBER_LOCK_CLASS, schemaKey])
    const opening = PgDatabase.open({ url: d.url, migrations: [items], timing: { lockWaitMs: 20_000 } })
    await new Promise((r) => setTimeout(r, 700))
    await before.query('SELECT pg_advisory_unlock($1, $2)', [MEMBER_LOCK_CLASS, schemaKey])
    const member = await opening
    cleanup.push(() => member.close())
    expect(member.get<{ n: number }>("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()")!.n).to.equal(1)
  })

  it("knows its own earlier connections by their server processes, not by name: a holder named as this process's is another", async () => {
    const d = await testDatabase({ empty: true })
    cleanup.push(d.drop)
    const twin = new pg.Client({ connectionString: d.url, application_name: connectionName(process.pid, 1, hostname()) })
    await twin.connect()
    cleanup.push(() => twin.end())
    const schemaKey = await schemaKeyOf(twin)
    await twin.query('SELECT pg_advisory_lock($1, $2)', [MEMBER_LOCK_CLASS, schemaKey])
    const refused = (await PgDatabase.open({ url: d.url, migrations: [items], timing: { lockWaitMs: 300 } }).catch((e: unknown) => e)) as DatabaseError
    expect(refused.code).to.equal('DB_LOCKED')
    expect((await twin.query('SELECT 1 AS alive')).rows, 'and is not ended').to.deep.equal([{ alive: 1 }])
  })

  it("names its connections itself, whatever application_name the URL gives", async () => {
    const d = await testDatabase({ empty: true })
    cleanup.push(d.drop)
    const member = await PgDatabase.open({ url: `${d.url}?application_name=custom`, migrations: [items] })
    cleanup.push(() => member.close())
    expect(member.get<{ name: string }>('SELECT application_name AS name FROM pg_stat_activity WHERE pid = pg_backend_pid()')!.name).to.match(new RegExp(`^parley ${process.pid}\\.\\d+@`))
  })

  it('writes nothing more once another process took the database over while it was disconnected, even after that one left', async () => {
    const d = await testDatabase({ empty: true })
    cleanup.push(d.drop)
    const member = await PgDatabase.open({ url: d.url, migrations: [items] })
    cleanup.push(() => member.close())
    const backend = member.get<{ p: number }>('SELECT pg_backend_pid() AS p')!.p
    const schemaKey = member.get<{ k: number }>(SCHEMA_KEY_SQL)!.k
    const intruder = await connection(d.url)
    cleanup.push(() => intruder.end())
    // The member's connection ends; the intruder waits for the lock, which it gets as that backend exits, before the
    // member has even seen its connection go.
    const taken = intruder.query('SELECT pg_advisory_lock($1, $2)', [MEMBER_LOCK_CLASS, schemaKey])
    const admin = await connection(d.url)
    cleanup.push(() => admin.end())
    await waitUntil('the intruder to wait for the lock', async () => (await admin.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1::oid AND pid = $2", [MEMBER_LOCK_CLASS, (intruder as unknown as { processID: number }).processID])).rowCount === 1)
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

const mine: Backend = { pid: 100, since: '2026-11-30 10:00:00+00' }
const holder = (pid: number, since = `2026-11-30 09:00:0${pid % 10}+00`): LockHolder => ({ pid, since, applicationName: `parley 1.${pid}@h`, client: '10.0.0.1' })

/** A settling whose claims answer in turn from `answers`, recording what it was asked to do. */
function scriptedSettling(answers: Claim[], over: Partial<LockSettling> = {}): { x: LockSettling; done: string[] } {
  const done: string[] = []
  const x: LockSettling = {
    claim: async () => {
      const next = answers.shift()
      if (next === undefined) throw new Error('claimed more often than scripted')
      done.push('held' in next ? 'claim: held' : `claim: held by ${next.heldBy?.pid ?? 'nobody now'}`)
      return next
    },
    terminate: async (pid) => void done.push(`terminate ${pid}`),
    previous: { pid: 7, since: holder(7).since },
    waitingForOwn: (h) => void done.push(`waiting for ${h.pid}`),
    closed: () => false,
    sleep: async () => {},
    waitForOthersUntil: undefined,
    ...over,
  }
  return { x, done }
}

describe('PostgreSQL member lock: settling it on a new connection', () => {
  it("ends this session's previous connection and waits for it, saying so, writing nothing meanwhile", async () => {
    const { x, done } = scriptedSettling([{ heldBy: holder(7) }, { heldBy: holder(7) }, { held: mine }])
    expect(await settleMemberLock(x)).to.deep.equal({ held: mine })
    expect(done).to.deep.equal(['claim: held by 7', 'terminate 7', 'waiting for 7', 'claim: held by 7', 'terminate 7', 'waiting for 7', 'claim: held'])
  })

  it('takes a server process of the same id but a later start for another (ids are reused)', async () => {
    const { x, done } = scriptedSettling([{ heldBy: holder(7, '2026-11-30 11:00:00+00') }])
    expect(await settleMemberLock(x)).to.deep.equal({ refused: holder(7, '2026-11-30 11:00:00+00') })
    expect(done).to.deep.equal(['claim: held by 7'])
  })

  it('refuses another holder at once after the session was connected, and on a first open once its wait is over', async () => {
    expect(await settleMemberLock(scriptedSettling([{ heldBy: holder(9) }]).x)).to.deep.equal({ refused: holder(9) })
    const waiting = scriptedSettling([{ heldBy: holder(9) }, { heldBy: holder(9) }, { held: mine }], { previous: undefined, waitForOthersUntil: Date.now() + 60_000 })
    expect(await settleMemberLock(waiting.x)).to.deep.equal({ held: mine })
    expect(waiting.done).to.not.include('terminate 9')
    const over = scriptedSettling([{ heldBy: holder(9) }], { previous: undefined, waitForOthersUntil: Date.now() - 1 })
    expect(await settleMemberLock(over.x)).to.deep.equal({ refused: holder(9) })
  })

  it('claims again when the holder left between the claim and the look at it, a few times before it refuses', async () => {
    expect(await settleMemberLock(scriptedSettling([{ heldBy: undefined }, { held: mine }]).x)).to.deep.equal({ held: mine })
    expect(await settleMemberLock(scriptedSettling(Array.from({ length: 21 }, () => ({ heldBy: undefined }))).x)).to.deep.equal({ refused: undefined })
  })

  it('stops when the session is closed meanwhile, even as the lock is taken (its connection, ended, lets it go)', async () => {
    let closed = false
    const { x } = scriptedSettling([{ heldBy: holder(7) }], { waitingForOwn: () => (closed = true), closed: () => closed })
    expect(await settleMemberLock(x)).to.deep.equal({ closed: true })
    expect(await settleMemberLock(scriptedSettling([{ held: mine }], { closed: () => true }).x)).to.deep.equal({ closed: true })
  })
})

describe('PostgreSQL member lock: who holds it', () => {
  it('names a connection by process, session and host, in ASCII within the 63 bytes PostgreSQL keeps', () => {
    expect(connectionName(4242, 7, 'vm')).to.equal('parley 4242.7@vm')
    expect(connectionName(4242, 7, 'h'.repeat(100))).to.have.length(63)
    expect(connectionName(1, 2, 'hôte')).to.equal('parley 1.2@h?te')
  })

  it("leaves out an application_name the URL gives, and the rest of the URL as written", () => {
    expect(withoutApplicationName('postgres://u:p%40ss@h:5432/db?application_name=x&options=-c%20search_path%3Dm1')).to.equal('postgres://u:p%40ss@h:5432/db?options=-c%20search_path%3Dm1')
    expect(withoutApplicationName('postgres://u:pw@/db?host=/sock&application_name=x')).to.equal('postgres://u:pw@/db?host=/sock')
    expect(withoutApplicationName('postgresql://h/db?application_name=x')).to.equal('postgresql://h/db')
    expect(withoutApplicationName('postgres://u:p%40ss@h:5432/db?options=-c%20search_path%3Dm1')).to.equal('postgres://u:p%40ss@h:5432/db?options=-c%20search_path%3Dm1')
    expect(withoutApplicationName('postgres://h/db')).to.equal('postgres://h/db')
  })

  it('says who holds it, or that something does', () => {
    expect(heldByText({ pid: 12, since: 't', applicationName: 'parley 1.2@vm', client: '10.0.0.5' })).to.equal(
      'another process has this member database open: "parley 1.2@vm" from 10.0.0.5 (server process 12); stop it first',
    )
    expect(heldByText({ pid: 12, since: 't', applicationName: '', client: 'a local socket' })).to.equal(
      'another process has this member database open: a connection from a local socket (server process 12); stop it first',
    )
    expect(heldByText(undefined)).to.equal('another connection holds this member database (its Parley lock)')
  })
})
