import type { Database } from '../../../node/db/database.js'

/**
 * The indexes tables have, by name, with their definitions as the engine holds them (SQLite: the CREATE statement;
 * PostgreSQL: pg_indexes.indexdef): what a migration that rebuilds a table must recreate as it was. Unique constraints
 * are left out (a rebuild may change them on purpose).
 */
export function indexesOf(db: Database, engine: string, tables: readonly string[]): Record<string, string> {
  const list = tables.map((t) => `'${t}'`).join(', ')
  const rows =
    engine === 'sqljs'
      ? db.all<{ name: string; def: string }>(`SELECT name, sql AS def FROM sqlite_master WHERE type = 'index' AND tbl_name IN (${list}) AND sql IS NOT NULL ORDER BY name`)
      : db.all<{ name: string; def: string }>(`SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE tablename IN (${list}) AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key' ORDER BY name`)
  return Object.fromEntries(rows.map((r) => [r.name, r.def]))
}
