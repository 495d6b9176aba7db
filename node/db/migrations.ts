import { createHash } from 'node:crypto'
import { DatabaseError } from './errors.js'
import type { Dialect } from './engine.js'
import type { Migration, Row, SqlParams, Tx } from './types.js'

/** The part of Database that migrations need (kept narrow so this file does not import the class). */
export interface Migratable {
  readonly dialect: Dialect
  get<R extends Row = Row>(sql: string, params?: SqlParams): R | undefined
  all<R extends Row = Row>(sql: string, params?: SqlParams): R[]
  transaction<T>(fn: (tx: Tx) => T): Promise<T>
}

// `checksum` is nullable because databases created before checksums existed get the column by
// ALTER TABLE (which cannot add a NOT NULL column without a default), and both kinds must look alike.
const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  applied_at TEXT NOT NULL,
  checksum   TEXT
)`

const START_OVER = 'start from a new state folder (e.g. npm run network:up -- --dir <new dir>) or remove this one'

/**
 * sha256 (hex) of a migration's SQL. Only trailing whitespace and blank lines are ignored, so that an
 * editor's reformatting does not make every existing database unusable, while any change a statement
 * could notice (indentation inside a string literal included) does. Changing this normalisation would
 * refuse every existing database just the same: test/db/shipped-migrations.test.ts pins its output.
 */
export function migrationChecksum(m: Pick<Migration, 'up'>): string {
  const normalised = m.up
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line !== '')
    .join('\n')
  return createHash('sha256').update(normalised, 'utf8').digest('hex')
}

type AppliedRow = { version: number; name: string; checksum: string | null }

/**
 * Applies, in version order, each migration the database has not recorded yet, each in its own
 * journaled transaction together with its row in `schema_migrations`, so a crash leaves every
 * migration either wholly applied and recorded or not at all. The time of application is a bound
 * value, like every non-deterministic input, so replay records the same time.
 *
 * Migrations are append-only: the schema of a database is the result of the exact SQL it ran, so a
 * database whose recorded migrations do not match this build's (rewritten SQL, a different migration
 * under the same version, a version this build lacks) is refused before anything is written, rather
 * than run on a schema the code does not expect.
 */
export async function applyMigrations(db: Migratable, migrations: readonly Migration[]): Promise<number[]> {
  const ordered = validate(migrations)
  const byVersion = new Map(ordered.map((m) => [m.version, { m, checksum: migrationChecksum(m) }]))
  const { rows, hasChecksumColumn } = appliedRows(db)

  const unknown = rows.filter((r) => !byVersion.has(r.version)).map((r) => r.version)
  if (unknown.length > 0) {
    throw new DatabaseError(
      'DB_MIGRATION',
      `the database has schema versions this build of Parley does not know (${unknown.join(', ')}); it was written by a newer or different build: run that build on it, or ${START_OVER}`,
    )
  }

  const backfill: { version: number; checksum: string }[] = []
  for (const r of rows) {
    const known = byVersion.get(r.version)
    if (!known) continue
    // Before checksums, the name is the only record of which migration ran; identical SQL under a
    // new name is still the same schema, so once a checksum exists it alone decides.
    const same = r.checksum === null ? r.name === known.m.name : r.checksum === known.checksum
    if (!same) {
      throw new DatabaseError(
        'DB_MIGRATION',
        `schema version ${r.version} of this database was written by a different build of Parley (migration "${r.name}" vs "${known.m.name}"); migrations are append-only, so this state folder cannot be used: ${START_OVER}`,
      )
    }
    if (r.checksum === null) backfill.push({ version: r.version, checksum: known.checksum })
  }

  const applied = new Set(rows.map((r) => r.version))
  const newest = Math.max(0, ...applied)
  const missing = ordered.find((m) => !applied.has(m.version) && m.version < newest)
  if (missing) {
    throw new DatabaseError(
      'DB_MIGRATION',
      `migration ${missing.version} (${missing.name}) is missing but later version ${newest} is applied; the database was written by a different build of Parley: ${START_OVER}`,
    )
  }

  // One transaction, so that a crash leaves either the old table or the upgraded and filled-in one.
  if (!hasChecksumColumn || backfill.length > 0) {
    await db.transaction((tx) => {
      if (!hasChecksumColumn) tx.run('ALTER TABLE schema_migrations ADD COLUMN checksum TEXT')
      for (const b of backfill) tx.run('UPDATE schema_migrations SET checksum = ? WHERE version = ?', [b.checksum, b.version])
    })
  }

  // Every pending migration is started at once, in order, so that they share one commit and one journal write
  // (a fresh database runs them all at every first start); each is still its own transaction. One that fails
  // stops the rest: they were written for the schema it would have made.
  const ran: number[] = []
  const durable: Promise<void>[] = []
  for (const { m, checksum } of byVersion.values()) {
    if (applied.has(m.version)) continue
    const failed = (err: unknown): never => {
      throw new DatabaseError('DB_MIGRATION', `migration ${m.version} (${m.name}) failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
    }
    durable.push(
      db
        .transaction((tx) => {
          tx.exec(CREATE_TABLE)
          tx.exec(m.up)
          m.backfill?.(tx)
          tx.run('INSERT INTO schema_migrations (version, name, applied_at, checksum) VALUES (?, ?, ?, ?)', [m.version, m.name, new Date().toISOString(), checksum])
        })
        .catch(failed),
    )
    // Reads see the open tick: the row is there only if the transaction went through (its function may return and
    // the transaction still be refused, its writes undone).
    if (db.get('SELECT 1 AS x FROM schema_migrations WHERE version = ?', [m.version]) === undefined) break
    ran.push(m.version)
  }
  await Promise.all(durable)
  return ran
}

function validate(migrations: readonly Migration[]): Migration[] {
  const ordered = [...migrations].sort((a, b) => a.version - b.version)
  ordered.forEach((m, i) => {
    if (!Number.isSafeInteger(m.version) || m.version <= 0) {
      throw new DatabaseError('DB_MIGRATION', `migration "${m.name}" has an invalid version ${m.version}`)
    }
    if (i > 0 && ordered[i - 1]?.version === m.version) {
      throw new DatabaseError('DB_MIGRATION', `two migrations have version ${m.version}`)
    }
  })
  return ordered
}

function tableExists(db: Migratable): boolean {
  return db.get(db.dialect.tableExists, ['schema_migrations']) !== undefined
}

/** With no table yet, the first migration creates it with the column, so there is nothing to add. */
function appliedRows(db: Migratable): { rows: AppliedRow[]; hasChecksumColumn: boolean } {
  if (!tableExists(db)) return { rows: [], hasChecksumColumn: true }
  const hasChecksumColumn = db.get(db.dialect.columnExists, ['schema_migrations', 'checksum']) !== undefined
  const checksum = hasChecksumColumn ? 'checksum' : 'NULL AS checksum'
  const rows = db.all<AppliedRow>(`SELECT version, name, ${checksum} FROM schema_migrations ORDER BY version`)
  return { rows, hasChecksumColumn }
}
