import { join } from 'node:path'
import { Database, type DatabaseOptions, type Migration } from '../../node/db/database.js'
import type { JournalSink } from '../../node/db/journal-file.js'
import { PgDatabase } from '../../node/db/pg/pg-database.js'
import { catalogOf } from '../../node/db/catalog.js'
import { testDatabase } from './postgres.js'
import type { SnapshotBuilder } from '../../node/db/checkpoint.js'
import { buildSnapshot } from '../../node/db/snapshot-build.js'
import { migrations } from '../../node/db/schema/index.js'
import type { BlobRefsRepo } from '../../node/db/repos/blob-refs.js'
import type { IdentitiesRepo } from '../../node/db/repos/identities.js'
import { receivedItem } from '../../node/db/repos/data.js'
import type { Data } from '../../node/model/index.js'
import { openRepositories, type Repositories } from '../../node/db/repos/index.js'
import { newId, type IdentityId, type MessageId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import { TempDirs } from './db/helpers.js'
import { withoutJournalSync } from './db/journal-no-sync.js'

/** A node's database and every repository over it, as node/node.ts opens them (`refs` is `blobRefs`). */
export type Repos = Repositories & { db: Database; refs: BlobRefsRepo }

/**
 * Builds a checkpoint's snapshot on the calling thread. The database's close checkpoints; in its worker thread, which
 * loads tsx and SQLite of its own under the tests, that took about a second per test. A unit test's database is tiny,
 * and the worker is tested where checkpoints are (test/db).
 */
export const snapshotInThread: SnapshotBuilder = async (dir, started) => {
  started()
  return buildSnapshot(dir)
}

/**
 * How the tests open a sql.js database, beyond its folder: snapshots built in-thread, and a journal without its
 * fdatasync (journal-no-sync.ts).
 */
export const testSqljs = { buildSnapshot: snapshotInThread, wrapJournal: withoutJournalSync } satisfies Pick<DatabaseOptions, 'buildSnapshot' | 'wrapJournal'>

/** The engines the db and repository tests run on (node/db/engine.ts). */
export const ENGINES = ['sqljs', 'postgres'] as const
export type TestEngine = (typeof ENGINES)[number]

/**
 * Declares the suite `body` once per engine, titled with it. On PostgreSQL the databases its tests open (openRepos,
 * freshReposEachTest) are dropped after it.
 */
export function forEachEngine(title: string, body: (engine: TestEngine) => void): void {
  for (const engine of ENGINES) {
    describe(`${title} [${engine}]`, function () {
      if (engine === 'postgres') after(dropPgDatabases)
      body(engine)
    })
  }
}

/** PostgreSQL test databases by the folder a test opened them for: opening the folder again opens the same database. */
const pgDatabases = new Map<string, { url: string; drop(): Promise<void> }>()

async function dropPgDatabases(): Promise<void> {
  const all = [...pgDatabases.values()]
  pgDatabases.clear()
  await Promise.all(all.map((d) => d.drop()))
}

/**
 * Opens a database with the node's schema and builds its repositories, as node/node.ts does. sql.js: in `dir`
 * (snapshots built in-thread). PostgreSQL: a database of the run's server, the same one whenever `dir` is the same
 * (created migrated at the first open, dropped after the forEachEngine suite).
 */
export async function openRepos(dir: string, engine: TestEngine = 'sqljs'): Promise<Repos> {
  return reposOver(await openTestDatabase(dir, migrations, engine))
}

/**
 * Opens the database of `dir` with `ms` on `engine`: sql.js in the folder, PostgreSQL in the run server's database
 * for that folder (created at the first open: migrated to the node's schema when `ms` is it, else empty). On sql.js,
 * `sqljs.wrapJournal` (a fault) wraps the journal after its sync is taken out, and `sqljs.log` gets its lines.
 */
export async function openTestDatabase(dir: string, ms: readonly Migration[], engine: TestEngine, sqljs: Pick<DatabaseOptions, 'wrapJournal' | 'log'> = {}): Promise<Database> {
  if (engine === 'sqljs') {
    const fault = sqljs.wrapJournal
    const wrapJournal = fault ? (sink: JournalSink) => fault(testSqljs.wrapJournal(sink)) : testSqljs.wrapJournal
    return Database.open({ dir, migrations: ms, ...testSqljs, wrapJournal, ...(sqljs.log ? { log: sqljs.log } : {}), ...(ms === migrations ? runTemplate() : {}) })
  }
  let d = pgDatabases.get(dir)
  if (!d) {
    d = await testDatabase({ empty: ms !== migrations })
    pgDatabases.set(dir, d)
  }
  return PgDatabase.open({ url: d.url, migrations: ms })
}

/** Opens the database of `dir` on `engine` with every migration before `version`: what a migration's test upgrades. */
export async function openBeforeVersion(dir: string, version: number, engine: TestEngine): Promise<Database> {
  const at = migrations.findIndex((m) => m.version === version)
  if (at < 0) throw new Error(`no migration ${version}`)
  return openTestDatabase(dir, migrations.slice(0, at), engine)
}

/**
 * Where a new sql.js database with the node's schema starts from: the run's template (node/db/fresh-template.ts, as a
 * network's members share their build's), written by the run's first database migrated and copied by every later one.
 * Migrating, and the checkpoint of those writes at the close, cost ~0.1 s of CPU per database; a copy a few ms, and
 * hundreds of tests open one. Databases of other migrations, or opened outside a mocha run, migrate as usual.
 */
function runTemplate(): { template?: string } {
  const run = process.env[TEST_RUN_ENV]
  return run === undefined || run === '' ? {} : { template: join(run, 'node-schema.sqlite') }
}
const TEST_RUN_ENV = 'PARLEY_TEST_RUN'

/**
 * Mocha hooks for a suite whose every test starts from an empty database: before each, one in a temporary folder,
 * handed to `use`; after each, closed and its folder removed. On PostgreSQL one database serves the suite, emptied
 * before each test (a database per test would cost a second each).
 */
export function freshReposEachTest(use: (r: Repos) => void, engine: TestEngine = 'sqljs'): void {
  if (engine === 'postgres') return freshPgReposEachTest(use)
  const dirs = new TempDirs()
  let open: Repos | undefined
  beforeEach(async () => {
    open = await openRepos(await dirs.make())
    use(open)
  })
  afterEach(async () => {
    await open?.db.close()
    open = undefined
    await dirs.cleanup()
  })
}

function freshPgReposEachTest(use: (r: Repos) => void): void {
  let db: PgDatabase | undefined
  let drop: (() => Promise<void>) | undefined
  let tables = ''
  before(async () => {
    const d = await testDatabase()
    drop = d.drop
    db = await PgDatabase.open({ url: d.url, migrations })
    tables = db
      .all<{ name: string }>(catalogOf('postgres').tables)
      .map((r) => r.name)
      .filter((t) => t !== 'schema_migrations')
      .join(', ')
  })
  beforeEach(async () => {
    await db!.transaction((tx) => tx.run(`TRUNCATE ${tables} RESTART IDENTITY`))
    use(reposOver(db!))
  })
  after(async () => {
    await db?.close()
    await drop?.()
  })
}

/** Every repository over an open database (one opened with fault injection, say). */
export function reposOver(db: Database): Repos {
  const repos = openRepositories(db)
  return { ...repos, db, refs: repos.blobRefs }
}

/** Records an org and its signing key as registered, as its confirmed claim would. */
export async function registerOrg(db: Database, identities: IdentitiesRepo, name: string, key: string): Promise<void> {
  const id = newId<IdentityId>()
  await db.transaction((tx) => {
    identities.insert(tx, { id, did: `did:firefly:org/${name}`, type: 'org', namespace: 'svc_system', name, messages: { claim: newId<MessageId>() }, created: now() })
    identities.insertVerifier(tx, { identity: id, type: 'ethereum_address', value: key, created: now() })
  })
}

/**
 * Registers `n` orgs `org<i>`, each with a node `node<i>`, straight into the identities table (no claims on chain):
 * the members a group can be made of.
 */
export async function registerMembers(r: Repos, n: number): Promise<{ orgs: IdentityId[]; nodes: IdentityId[] }> {
  const orgs: IdentityId[] = []
  const nodes: IdentityId[] = []
  await r.db.transaction((tx) => {
    for (let i = 0; i < n; i++) {
      const org = newId<IdentityId>()
      const node = newId<IdentityId>()
      r.identities.insert(tx, { id: org, did: `did:firefly:org/org${i}`, type: 'org', namespace: 'svc_system', name: `org${i}`, messages: { claim: newId<MessageId>() }, created: now() })
      r.identities.insert(tx, { id: node, did: `did:firefly:node/node${i}`, type: 'node', parent: org, namespace: 'svc_system', name: `node${i}`, messages: { claim: newId<MessageId>() }, created: now() })
      orgs.push(org)
      nodes.push(node)
    }
  })
  return { orgs, nodes }
}

/** A data item as a batch carries it in its own namespace, with the digest that names its received row. */
export function withDigest(d: Data): Data {
  return receivedItem(d, d.namespace)
}
