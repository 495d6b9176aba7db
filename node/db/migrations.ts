import { DatabaseError } from './errors.js'
import type { Migration, Row, SqlParams, Tx } from './types.js'

/** The part of Database that migrations need (kept narrow so this file does not import the class). */
export interface Migratable {
  get<R extends Row = Row>(sql: string, params?: SqlParams): R | undefined
  all<R extends Row = Row>(sql: string, params?: SqlParams): R[]
  transaction<T>(fn: (tx: Tx) => T): Promise<T>
}

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  applied_at TEXT NOT NULL
)`

/**
 * Applies, in version order, each migration the database has not recorded yet, each in its own
 * journaled transaction together with its row in `schema_migrations`, so a crash leaves every
 * migration either wholly applied and recorded or not at all. The time of application is a bound
 * value, like every non-deterministic input, so replay records the same time.
 */
export async function applyMigrations(db: Migratable, migrations: readonly Migration[]): Promise<number[]> {
  const ordered = validate(migrations)
  const applied = new Set(appliedVersions(db))
  const newest = Math.max(0, ...applied)
  const known = new Set(ordered.map((m) => m.version))
  const unknown = [...applied].filter((v) => !known.has(v))
  if (unknown.length > 0) {
    throw new DatabaseError('DB_MIGRATION', `the database has schema versions this software does not know (${unknown.join(', ')}); it was written by a newer version`)
  }
  const ran: number[] = []
  for (const m of ordered) {
    if (applied.has(m.version)) continue
    if (m.version < newest) {
      throw new DatabaseError('DB_MIGRATION', `migration ${m.version} (${m.name}) is missing but later version ${newest} is applied`)
    }
    try {
      await db.transaction((tx) => {
        tx.exec(CREATE_TABLE)
        tx.exec(m.up)
        tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [m.version, m.name, new Date().toISOString()])
      })
    } catch (err) {
      throw new DatabaseError('DB_MIGRATION', `migration ${m.version} (${m.name}) failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
    }
    ran.push(m.version)
  }
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

function appliedVersions(db: Migratable): number[] {
  const exists = db.get("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
  if (!exists) return []
  return db.all<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version').map((r) => r.version)
}
