import { join } from 'node:path'
import { Database, type DatabaseOptions } from './database.js'
import type { DatabaseConfig } from './engine.js'
import { PgDatabase } from './pg/pg-database.js'
import type { Migration } from './types.js'

export interface OpenDatabaseOptions {
  /** The member's data folder: sql.js keeps its files under `<dataDir>/db`. */
  dataDir: string
  migrations: readonly Migration[]
  log?: (line: string) => void
  /** sql.js only: where a new database starts from (see fresh-template.ts). */
  template?: string
  /** sql.js only: the journal's wrapper and the snapshot builder, which tests replace (database.ts). */
  sqljs?: Pick<DatabaseOptions, 'wrapJournal' | 'buildSnapshot'>
  /** PostgreSQL only: how long to wait for another holder of the member lock (pg/member-lock.ts; 30 s by default). */
  lockWaitMs?: number
}

/** Opens the member's database on the engine its config names (`database.type`), migrated to `migrations`. */
export async function openDatabase(config: DatabaseConfig, opts: OpenDatabaseOptions): Promise<Database> {
  const log = opts.log ?? (() => {})
  if (config.type === 'postgres') return PgDatabase.open({ url: config.url, migrations: opts.migrations, log, ...(opts.lockWaitMs !== undefined ? { timing: { lockWaitMs: opts.lockWaitMs } } : {}) })
  const sqljs: DatabaseOptions = { ...opts.sqljs, dir: join(opts.dataDir, 'db'), migrations: opts.migrations, log, ...(opts.template !== undefined ? { template: opts.template } : {}) }
  return Database.open(sqljs)
}
