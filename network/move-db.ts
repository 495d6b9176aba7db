/**
 * `npm run network -- move-db <member> --to postgres|sqljs [--database-url URL]`: moves one member of a running local
 * network from one engine to the other, keeping its history. The member is stopped, its state copied and checked
 * (node/db/move/copy.ts, node/commands/move-member.ts), its config switched, and it is started again on its folder and ports; the rest of the network
 * runs on. A failed copy changes nothing: the member is started again on its old state.
 */
import { CopyRefused } from '../node/db/move/copy.js'
import { engineLabel, moveMemberDatabase, type MoveResult } from '../node/commands/move-member.js'
import type { EngineName } from '../node/db/engine.js'
import { ControlError, type NetworkControls } from './controls.js'
import { readDescription, readPids, stopRecorded, writeJsonAtomic } from './description.js'
import { isAlive } from './process.js'
import { layout } from './layout.js'
import { ensureDatabases, loadPg, withDatabase, withoutPassword, withServer } from './postgres/databases.js'
import { memberDatabase, readDatabaseRecord, serverUrlOf } from './startup/database.js'
import { networkCommand } from './command-line.js'

export interface MoveDbOptions {
  to: EngineName
  /** A PostgreSQL server (postgres://user:pw@host:port/) or a database on one (…/dbname) for the member. */
  databaseUrl?: string
  log?: (line: string) => void
}

export interface MemberMove extends MoveResult {
  org: string
}

export async function moveMemberEngine(c: NetworkControls, name: string, opts: MoveDbOptions): Promise<MemberMove> {
  const log = opts.log ?? (() => {})
  const m = c.member(name)
  const L = layout(c.dir)
  const configFile = L.member(m.org).config
  const url = opts.to === 'postgres' ? await targetDatabase(c, m.org, opts.databaseUrl) : undefined
  if (opts.to === 'sqljs' && opts.databaseUrl !== undefined) throw new ControlError('--database-url is for --to postgres')

  const running = readPids(L.pidsJson).processes.find((p) => p.name === m.node)
  if (running && isAlive(running.pid)) {
    log(`stopping ${m.org} (pid ${running.pid})`)
    await stopRecorded(running, 15_000)
  }
  let moved: MoveResult
  try {
    moved = await moveMemberDatabase({ configFile, to: opts.to, ...(url !== undefined ? { url } : {}), log })
  } catch (err) {
    log(`${m.org}: the move failed; starting it again on its old state`)
    await c.restart(m.org).catch((e: Error) => log(`${m.org} did not start again: ${e.message}`))
    throw err instanceof CopyRefused ? new ControlError(err.message) : err
  }
  const kept = moved.previous.type === 'postgres' ? await setAsideDatabase(moved.previous.url, log) : moved.kept
  describeMemberDatabase(c, m.org, moved.database.type === 'postgres' ? moved.database.url : undefined)
  log(`starting ${m.org} on ${engineLabel(moved.to)}`)
  await c.restart(m.org)
  return { ...moved, kept, org: m.org }
}

/**
 * The member's new database: the one `--database-url` names, or a database named for the member on the server it
 * gives or, without it, on the network's own PostgreSQL; created when missing.
 */
async function targetDatabase(c: NetworkControls, org: string, given: string | undefined): Promise<string> {
  const record = readDatabaseRecord(layout(c.dir))
  let server: string
  let name: string
  if (given !== undefined) {
    let u: URL
    try {
      u = new URL(given)
    } catch {
      throw new ControlError(`--database-url must be a URL like postgres://user:password@host:port/[dbname] (got ${JSON.stringify(given)})`)
    }
    if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw new ControlError(`--database-url must start with postgres:// (got ${u.protocol}//)`)
    name = u.pathname.length > 1 ? decodeURIComponent(u.pathname.slice(1)) : `parley_${org.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`
    server = withDatabase(given, 'postgres')
  } else if (record?.engine === 'postgres') {
    server = serverUrlOf(record)
    name = memberDatabase(record, org)
  } else {
    throw new ControlError(
      `the network in ${c.dir} runs no PostgreSQL server: give one with --database-url postgres://user:password@host:port/ ` +
        `(or start a network on PostgreSQL: ${networkCommand('up')} --database postgres)`,
    )
  }
  try {
    await ensureDatabases(server, [name])
  } catch (err) {
    throw new ControlError((err as Error).message)
  }
  return withDatabase(server, name)
}

/** The database the member left, renamed so that its name is free again; where it is now. */
async function setAsideDatabase(url: string, log: (line: string) => void): Promise<string> {
  const u = new URL(url)
  const name = decodeURIComponent(u.pathname.slice(1))
  const aside = `${name}_before_move_${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}`.slice(0, 63)
  try {
    const { escapeIdentifier } = await loadPg()
    await withServer(withDatabase(url, 'postgres'), (client) => client.query(`ALTER DATABASE ${escapeIdentifier(name)} RENAME TO ${escapeIdentifier(aside)}`))
    return withoutPassword(withDatabase(url, aside))
  } catch (err) {
    log(`the database ${name} could not be renamed (${(err as Error).message}): it stays under its name`)
    return withoutPassword(url)
  }
}

/** network.json names each member's database: the moved member's changes with it. */
function describeMemberDatabase(c: NetworkControls, org: string, url: string | undefined): void {
  const file = layout(c.dir).networkJson
  const d = readDescription(file)
  if (!d) return
  for (const m of d.members) {
    if (m.org !== org) continue
    if (url === undefined) delete m.database
    else m.database = withoutPassword(url)
  }
  writeJsonAtomic(file, d)
}
