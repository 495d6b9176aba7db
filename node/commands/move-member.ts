import { existsSync, readFileSync, renameSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomicSync, fsyncDirSync } from '../core/atomic-file.js'
import { loadNodeConfig, parseDatabaseConfig, type DatabaseConfig, type NodeConfigFile } from '../config.js'
import type { Database, EngineName } from '../db/engine.js'
import { DatabaseError } from '../db/errors.js'
import { openDatabase, type OpenDatabaseOptions } from '../db/open.js'
import { migrations } from '../db/schema/index.js'
import { copyDatabase, CopyRefused, type CopyOptions, type TableCopy } from '../db/move/copy.js'

export interface MoveRequest {
  /** The member's config file: read for its data folder and engine, rewritten to name the new one. */
  configFile: string
  to: EngineName
  /** For `to: 'postgres'`: the member's new database (it must exist, and be empty), postgres://user:pw@host:port/dbname. */
  url?: string
  log?: (line: string) => void
  /** Names the kept sql.js folder (`db.before-move-<time>`); the clock by default. */
  now?: () => Date
  pageRows?: CopyOptions['pageRows']
  /** How a sql.js side is opened, beyond its folder (tests build its snapshots in-thread). */
  sqljs?: OpenDatabaseOptions['sqljs']
}

export interface MoveResult {
  from: EngineName
  to: EngineName
  tables: TableCopy[]
  /** Where the member's previous state is, untouched (a folder, or a database URL without its password). */
  kept: string
  /** The engine it was on, as its config said (a PostgreSQL URL with its password). */
  previous: DatabaseConfig
  database: DatabaseConfig
}

/** How long the move waits for a member's PostgreSQL lock to be let go before it says the member runs. */
const MOVE_LOCK_WAIT_MS = 2_000

/**
 * Moves a stopped member's whole state from its engine to the other: copies and checks every table (copy.ts), then
 * rewrites its config to name the new engine, and only then puts the old state aside (a sql.js folder is renamed;
 * a PostgreSQL database is left as it is, its name said), so that a crash at any point leaves the member on one
 * complete state. Blobs are files under the data folder and stay there. Refused (CopyRefused) while the member runs,
 * when it is already on that engine, or when the target is not empty or has another schema.
 */
export async function moveMemberDatabase(req: MoveRequest): Promise<MoveResult> {
  const log = req.log ?? (() => {})
  const cfg = loadNodeConfig(req.configFile)
  const from = cfg.database.type
  if (from === req.to) throw new CopyRefused(`${cfg.org} is already on ${engineLabel(from)} (${req.configFile})`)
  const sqljsDir = join(cfg.dataDir, 'db')
  const target = targetConfig(req, cfg.org)
  if (from === 'sqljs' && !existsSync(sqljsDir)) throw new CopyRefused(`${cfg.org} has no sql.js database at ${sqljsDir}: nothing to move`)
  if (req.to === 'sqljs' && existsSync(sqljsDir)) {
    throw new CopyRefused(`${sqljsDir} already exists: move it away (or remove it) first, so that the copy starts from an empty sql.js database`)
  }

  // A member stopped just before closed its connection, and with it its lock: no need to wait long for a holder.
  const opening: OpenDatabaseOptions = { dataDir: cfg.dataDir, migrations, lockWaitMs: MOVE_LOCK_WAIT_MS, ...(req.sqljs ? { sqljs: req.sqljs } : {}) }
  log(`${cfg.org}: opening its ${engineLabel(from)} database`)
  const source = await openSide(cfg.database, opening, cfg.org, 'source')
  let copied: TableCopy[]
  try {
    log(`${cfg.org}: opening the ${engineLabel(req.to)} database to copy into`)
    const into = await openSide(target, opening, cfg.org, 'target')
    try {
      copied = await copyDatabase(source, into, {
        ...(req.pageRows !== undefined ? { pageRows: req.pageRows } : {}),
        progress: (table, rows) => {
          if (rows % 50_000 === 0) log(`${cfg.org}: ${table}: ${rows} rows copied`)
        },
      })
    } finally {
      await into.close()
    }
  } finally {
    await source.close()
  }
  log(`${cfg.org}: ${copied.length} tables copied and checked (${copied.reduce((n, t) => n + t.rows, 0)} rows)`)

  writeConfig(req.configFile, target)
  let kept: string
  if (cfg.database.type === 'sqljs') {
    kept = `${sqljsDir}.before-move-${stamp((req.now ?? (() => new Date()))())}`
    renameSync(sqljsDir, kept)
    fsyncDirSync(cfg.dataDir)
  } else {
    kept = withoutPassword(cfg.database.url)
  }
  return { from, to: req.to, tables: copied, kept, previous: cfg.database, database: target }
}

function targetConfig(req: MoveRequest, org: string): DatabaseConfig {
  if (req.to === 'sqljs') return { type: 'sqljs' }
  if (req.url === undefined) throw new CopyRefused(`moving ${org} to PostgreSQL needs the URL of its new database (postgres://user:password@host:port/dbname)`)
  // The config's own checks, so that what is written is a config the member accepts.
  return parseDatabaseConfig({ type: 'postgres', url: req.url }, (problem) => {
    throw new CopyRefused(problem)
  })
}

async function openSide(config: DatabaseConfig, opts: OpenDatabaseOptions, org: string, side: 'source' | 'target'): Promise<Database> {
  try {
    return await openDatabase(config, opts)
  } catch (err) {
    if (err instanceof DatabaseError && err.code === 'DB_LOCKED') {
      throw new CopyRefused(side === 'source' ? `${org} is running (${err.message}): stop it before moving its state` : `the target database is in use (${err.message}): give ${org} a database of its own`)
    }
    if (err instanceof DatabaseError && err.code === 'DB_MIGRATION') throw new CopyRefused(`the ${side} database's schema versions do not match this build's: ${err.message}`)
    throw err
  }
}

/** The config file, as written, with `database` naming the new engine (none for sql.js, the default). */
function writeConfig(file: string, database: DatabaseConfig): void {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as NodeConfigFile
  if (database.type === 'postgres') raw.database = { type: 'postgres', url: database.url }
  else delete raw.database
  // A PostgreSQL URL carries a password: the config is then readable by its owner alone, as the keys are.
  writeFileAtomicSync(file, JSON.stringify(raw, null, 2) + '\n', database.type === 'postgres' ? { mode: 0o600 } : {})
}

export function engineLabel(e: EngineName): string {
  return e === 'postgres' ? 'PostgreSQL' : 'sql.js'
}

function withoutPassword(url: string): string {
  const u = new URL(url)
  u.password = ''
  return u.toString()
}

function stamp(d: Date): string {
  return d.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')
}
