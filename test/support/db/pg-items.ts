import pg from 'pg'
import type { Migration } from '../../../node/db/database.js'
import { PgDatabase } from '../../../node/db/pg/pg-database.js'
import { testDatabase } from '../postgres.js'

/**
 * A PostgreSQL engine on a fresh database with an `items` table (`migration`), emptied before each test of the
 * calling suite (mocha hooks registered here), and a second connection that sees only what is committed.
 */
export function itemsDatabase(migration: Migration): { readonly db: PgDatabase; committed(): Promise<string[]> } {
  let db: PgDatabase | undefined
  let drop: (() => Promise<void>) | undefined
  let other: pg.Client | undefined
  before(async () => {
    const d = await testDatabase({ empty: true })
    drop = d.drop
    db = await PgDatabase.open({ url: d.url, migrations: [migration] })
    other = new pg.Client({ connectionString: d.url })
    await other.connect()
  })
  beforeEach(() => db!.transaction((tx) => tx.run('TRUNCATE items RESTART IDENTITY')))
  after(async () => {
    await other?.end()
    await db?.close()
    await drop?.()
  })
  return {
    get db(): PgDatabase {
      return db!
    },
    committed: async () => (await other!.query<{ id: string }>('SELECT id FROM items ORDER BY seq')).rows.map((r) => r.id),
  }
}
