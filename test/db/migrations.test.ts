import { expect } from 'chai'
import { Database, DatabaseError, type Migration } from '../../node/db/database.js'
import { migrationChecksum } from '../../node/db/migrations.js'
import { TempDirs } from '../support/db/helpers.js'
import { forEachEngine, openTestDatabase, type TestEngine } from '../support/repos.js'

const v1: Migration = { version: 1, name: 'items', up: 'CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)' }
const v2: Migration = {
  version: 2,
  name: 'tags',
  up: `
    CREATE TABLE tags (name TEXT PRIMARY KEY);
    CREATE INDEX tags_name ON tags (name);
  `,
}
const v3: Migration = { version: 3, name: 'notes', up: 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)' }
const v4: Migration = { version: 4, name: 'drop notes.body', up: 'ALTER TABLE notes DROP COLUMN body' }
const shipped = [v1, v2, v3]

interface Recorded {
  version: number
  name: string
  checksum: string | null
}

function recorded(db: Database): Recorded[] {
  return db.all<{ version: number; name: string; checksum: string | null }>('SELECT version, name, checksum FROM schema_migrations ORDER BY version')
}

function expected(ms: readonly Migration[]): Recorded[] {
  return ms.map((m) => ({ version: m.version, name: m.name, checksum: migrationChecksum(m) }))
}

async function refusal(p: Promise<unknown>): Promise<DatabaseError> {
  const err = await p.then(
    (db) => {
      void (db as Database).close()
      throw new Error('expected the open to be refused')
    },
    (e: unknown) => e,
  )
  expect(err).to.be.instanceOf(DatabaseError)
  expect((err as DatabaseError).code).to.equal('DB_MIGRATION')
  return err as DatabaseError
}

/**
 * What the runner did before checksums existed, statement for statement, so that a folder it wrote
 * can be made without keeping that runner around: each migration with its row in a table that has no
 * checksum column, in a journaled transaction of its own.
 */
async function applyWithoutChecksums(db: Database, ms: readonly Migration[]): Promise<void> {
  for (const m of ms) {
    await db.transaction((tx) => {
      tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version    INTEGER PRIMARY KEY,
        name       TEXT NOT NULL,
        applied_at TEXT NOT NULL
      )`)
      tx.exec(m.up)
      tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [m.version, m.name, '2024-01-01T00:00:00.000Z'])
    })
  }
}

/** Databases a test opened, closed after it: a folder's on sql.js, the database standing for it on PostgreSQL. */
function openedOn(engine: TestEngine) {
  const opened: Database[] = []
  return {
    openDb: async (dir: string, ms: readonly Migration[]): Promise<Database> => {
      const db = await openTestDatabase(dir, ms, engine)
      opened.push(db)
      return db
    },
    openRaw: (dir: string, ms: readonly Migration[]): Promise<Database> => openTestDatabase(dir, ms, engine),
    closeAll: async (): Promise<void> => {
      await Promise.all(opened.splice(0).map((db) => db.close().catch(() => {})))
    },
  }
}

forEachEngine('db: migrations are append-only', function (engine) {
  const temp = new TempDirs()
  const { openDb, openRaw, closeAll } = openedOn(engine)
  afterEach(closeAll)
  after(() => temp.cleanup())

  /** A folder whose runner predates checksums, closed (so its state is in the snapshot). */
  async function oldFolder(ms: readonly Migration[]): Promise<string> {
    const dir = await temp.make()
    const db = await openDb(dir, [])
    await applyWithoutChecksums(db, ms)
    await closeAll()
    return dir
  }

  it('ignores trailing whitespace and blank lines in the checksum, and nothing else', function () {
    const reformatted = { up: '\n' + v2.up.split('\n').map((l) => `${l}  \t`).join('\n\n') + '\n\n' }
    expect(migrationChecksum(reformatted)).to.equal(migrationChecksum(v2))
    expect(migrationChecksum({ up: v2.up.replace('    CREATE INDEX', '  CREATE INDEX') })).to.not.equal(migrationChecksum(v2))
    expect(migrationChecksum({ up: v2.up.replace('tags_name', 'tags_by_name') })).to.not.equal(migrationChecksum(v2))
    expect(migrationChecksum(v2)).to.match(/^[0-9a-f]{64}$/)
  })

  it('records a checksum for each migration of a fresh database', async function () {
    const db = await openDb(await temp.make(), shipped)
    expect(recorded(db)).to.deep.equal(expected(shipped))
  })

  it('applies the migrations of a fresh database in one commit (one journal write), each its own transaction', async function () {
    const db = await openDb(await temp.make(), shipped)
    // The database's own bookkeeping commit, if any, plus one for all three migrations.
    const bare = await openDb(await temp.make(), [])
    expect(db.stats().lastSeq).to.equal(bare.stats().lastSeq + 1)
  })

  it('stops at a migration that fails: the earlier ones stay applied, the later ones never run', async function () {
    const dir = await temp.make()
    const broken: Migration = { version: 2, name: 'broken', up: 'CREATE TABLE tags (name TEXT PRIMARY KEY); INSERT INTO no_such_table VALUES (1)' }
    const err = await refusal(openDb(dir, [v1, broken, v3]))
    expect(err.message).to.contain('migration 2 (broken) failed').and.contain('no_such_table')
    await closeAll()
    const db = await openDb(dir, [v1])
    expect(recorded(db)).to.deep.equal(expected([v1]))
    expect(db.get(db.dialect.tableExists, ['tags'])).to.equal(undefined)
    expect(db.get(db.dialect.tableExists, ['notes'])).to.equal(undefined)
  })

  it('applies nothing when reopened with the same migrations (or the same ones reformatted)', async function () {
    const dir = await temp.make()
    await openDb(dir, shipped)
    await closeAll()
    const seq = async (ms: readonly Migration[]): Promise<number> => {
      const db = await openDb(dir, ms)
      const s = db.stats().lastSeq
      expect(recorded(db)).to.deep.equal(expected(shipped))
      await closeAll()
      return s
    }
    const before = await seq(shipped)
    const reformatted = { ...v2, up: v2.up.replace(/\n/g, '   \n\n') }
    expect(await seq([v1, reformatted, v3])).to.equal(before)
    expect(await seq(shipped)).to.equal(before)
  })

  it('refuses a database whose migration 2 ran different SQL, and leaves it untouched', async function () {
    const dir = await temp.make()
    const rewritten = { ...v2, up: v2.up.replace('name TEXT PRIMARY KEY', 'name TEXT PRIMARY KEY, colour TEXT') }
    await openDb(dir, [v1, rewritten, v3])
    await closeAll()
    const err = await refusal(openRaw(dir, shipped))
    expect(err.message).to.equal(
      'DB_MIGRATION: schema version 2 of this database was written by a different build of Parley (migration "tags" vs "tags"); ' +
        'migrations are append-only, so this state folder cannot be used: start from a new state folder (e.g. npm run network:up -- --dir <new dir>) or remove this one',
    )
    const again = await openDb(dir, [v1, rewritten, v3])
    expect(recorded(again)).to.deep.equal(expected([v1, rewritten, v3]))
  })

  it('fills in the checksums of a database from before checksums when the names match, durably', async function () {
    const dir = await oldFolder(shipped)
    const db = await openDb(dir, shipped)
    expect(recorded(db)).to.deep.equal(expected(shipped))
    if (engine === 'sqljs') {
      // Not closed: the upgrade must come back from the journal alone, as after a crash.
      const image = await temp.crashImage(dir)
      const replayed = await openDb(image, shipped)
      expect(recorded(replayed)).to.deep.equal(expected(shipped))
    }
    await closeAll()
    const reopened = await openDb(dir, [...shipped, v4])
    expect(recorded(reopened)).to.deep.equal(expected([...shipped, v4]))
  })

  it('adds the column to an old table that records no migration yet', async function () {
    const dir = await temp.make()
    const db = await openDb(dir, [])
    await db.transaction((tx) => tx.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)'))
    await closeAll()
    expect(recorded(await openDb(dir, shipped))).to.deep.equal(expected(shipped))
  })

  it('refuses a database from before checksums whose migration has another name, and leaves it untouched', async function () {
    const other = { ...v2, name: 'labels' }
    const dir = await oldFolder([v1, other, v3])
    const err = await refusal(openRaw(dir, shipped))
    expect(err.message).to.contain('schema version 2 of this database was written by a different build of Parley (migration "labels" vs "tags")')
    expect(err.message).to.contain('start from a new state folder (e.g. npm run network:up -- --dir <new dir>) or remove this one')
    // The build that wrote it can still open it, and the refusal wrote nothing: the three migrations
    // plus this open's one upgrade transaction are all the journal has seen.
    const db = await openDb(dir, [v1, other, v3])
    expect(recorded(db)).to.deep.equal(expected([v1, other, v3]))
    // sql.js counts its journal's records over every open: the three migrations and this open's upgrade.
    if (engine === 'sqljs') expect(db.stats().lastSeq).to.equal(4)
  })

  it('accepts a renamed migration whose SQL is unchanged once its checksum is recorded', async function () {
    const dir = await temp.make()
    await openDb(dir, shipped)
    await closeAll()
    const db = await openDb(dir, [v1, { ...v2, name: 'tags, renamed' }, v3])
    expect(recorded(db)).to.deep.equal(expected(shipped))
  })

  it('still refuses a database missing a middle migration, and says what to do', async function () {
    const dir = await temp.make()
    await openDb(dir, [v1, v3])
    await closeAll()
    const err = await refusal(openRaw(dir, shipped))
    expect(err.message).to.match(/migration 2 \(tags\) is missing but later version 3 is applied/)
    expect(err.message).to.contain('start from a new state folder')
  })

  it('still refuses versions this build does not know, and says what to do', async function () {
    const dir = await temp.make()
    await openDb(dir, [...shipped, v4])
    await closeAll()
    const err = await refusal(openRaw(dir, shipped))
    expect(err.message).to.match(/schema versions this build of Parley does not know \(4\)/)
    expect(err.message).to.contain('run that build on it, or start from a new state folder')
  })

  it('applies an appended migration on reopen and records its checksum', async function () {
    const dir = await temp.make()
    await openDb(dir, shipped)
    await closeAll()
    const db = await openDb(dir, [...shipped, v4])
    expect(recorded(db)).to.deep.equal(expected([...shipped, v4]))
    expect(db.get(db.dialect.columnExists, ['notes', 'id'])).to.not.equal(undefined)
    expect(db.get(db.dialect.columnExists, ['notes', 'body'])).to.equal(undefined)
  })
})
