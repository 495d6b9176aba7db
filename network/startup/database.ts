import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { basename } from 'node:path'
import { writeFileAtomicSync } from '../../node/core/atomic-file.js'
import type { Layout } from '../layout.js'
import { withDatabase, withoutPassword } from '../postgres/databases.js'
import type { ManagedServer } from '../postgres/cluster.js'

/** The engine a network's members keep their state in, as `startNetwork` and `network:up` take it. */
export type DatabaseEngine = 'sqljs' | 'postgres'

/**
 * What a state folder remembers of its members' databases (`<dir>/database.json`, mode 0600: it holds the server's
 * password): sql.js; or PostgreSQL, on the server the network runs under `<dir>/postgres/` (managed) or on one the
 * user runs (`url`), the members' databases named `<prefix><org>`.
 */
export type DatabaseRecord =
  | { engine: 'sqljs' }
  | ({ engine: 'postgres'; managed: true; prefix: string } & ManagedServer)
  | { engine: 'postgres'; managed: false; url: string; prefix: string }

/** The superuser of a managed server. */
const MANAGED_USER = 'parley'

/** What network.json says of the databases (without any password: the members' configs hold the URLs with it). */
export type DatabaseDescription = { engine: 'sqljs' } | { engine: 'postgres'; managed: boolean; server: string }

export function readDatabaseRecord(L: Layout): DatabaseRecord | undefined {
  if (!existsSync(L.databaseJson)) return undefined
  return JSON.parse(readFileSync(L.databaseJson, 'utf8')) as DatabaseRecord
}

export function writeDatabaseRecord(L: Layout, r: DatabaseRecord): void {
  writeFileAtomicSync(L.databaseJson, JSON.stringify(r, null, 2) + '\n', { mode: 0o600 })
}

/**
 * Start-up phase 1 for the databases: the folder's engine, or the one asked for when the folder has no member yet.
 * A folder with members keeps its engine: a `database` or `databaseUrl` that contradicts it is refused before
 * anything starts (a member's state does not follow a flag from one engine to another). A folder without a record
 * but with members predates the choice, and is sql.js. A new managed server gets a random password and a free port
 * (`port`), kept for every later start.
 */
export async function planDatabase(L: Layout, opts: { database?: DatabaseEngine; databaseUrl?: string }, hasMembers: boolean, port: () => Promise<number>): Promise<DatabaseRecord> {
  const wanted = wantedEngine(opts)
  const recorded = readDatabaseRecord(L) ?? (hasMembers ? { engine: 'sqljs' as const } : undefined)
  if (recorded && hasMembers) {
    if (wanted && !sameChoice(recorded, wanted)) throw engineMismatch(L, recorded, wanted)
    return recorded
  }
  // No member yet: the flags decide, and nothing of a failed first start is worth keeping but a managed server's
  // cluster (initdb's seconds), when still wanted.
  if (recorded && (wanted === undefined || sameChoice(recorded, wanted))) return recorded
  const choice: Wanted = wanted ?? { engine: 'sqljs' }
  if (existsSync(L.postgres.dir)) rmSync(L.postgres.dir, { recursive: true, force: true })
  if (choice.engine === 'sqljs') return { engine: 'sqljs' }
  const prefix = databasePrefix(L, choice.url !== undefined)
  if (choice.url !== undefined) return { engine: 'postgres', managed: false, url: serverUrl(choice.url), prefix }
  return { engine: 'postgres', managed: true, prefix, port: await port(), user: MANAGED_USER, password: randomBytes(18).toString('base64url') }
}

type Wanted = { engine: 'sqljs'; url?: undefined } | { engine: 'postgres'; url?: string }

function wantedEngine(opts: { database?: DatabaseEngine; databaseUrl?: string }): Wanted | undefined {
  if (opts.database !== undefined && opts.database !== 'sqljs' && opts.database !== 'postgres') {
    throw new Error(`--database must be sqljs or postgres (got ${JSON.stringify(opts.database)})`)
  }
  if (opts.databaseUrl !== undefined) {
    if (opts.database === 'sqljs') throw new Error('--database-url names a PostgreSQL server: it goes with --database postgres (or alone), not with sqljs')
    return { engine: 'postgres', url: opts.databaseUrl }
  }
  return opts.database === undefined ? undefined : { engine: opts.database }
}

function sameChoice(r: DatabaseRecord, w: Wanted): boolean {
  if (r.engine !== w.engine) return false
  if (r.engine === 'sqljs') return true
  // `--database postgres` alone on a folder whose members are on a server of the user's: the folder says which.
  if (w.url === undefined) return true
  return !r.managed && r.url === serverUrl(w.url)
}

function engineMismatch(L: Layout, r: DatabaseRecord, w: Wanted): Error {
  const has = r.engine === 'sqljs' ? 'sql.js' : r.managed ? `PostgreSQL (its own server, under ${L.postgres.dir})` : `PostgreSQL on ${withoutPassword(r.url)}`
  const asked = w.engine === 'sqljs' ? '--database sqljs' : w.url !== undefined ? `--database-url ${withoutPassword(serverUrl(w.url))}` : '--database postgres'
  return new Error(
    `the network in ${L.root} keeps its members' state in ${has}; ${asked} contradicts it, and nothing was started. ` +
      'Resume it without the flag, or start a new network in another folder (--dir)',
  )
}

/** A server's URL as the record keeps it: scheme, credentials, host, port and connection options (`?sslmode=...`), no database. */
function serverUrl(raw: string): string {
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    // Not echoed: what does not parse may still hold a password.
    throw new Error('--database-url must be a URL like postgres://user:password@host:port/ (what was given does not parse as one)')
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw new Error(`--database-url must start with postgres:// (got ${u.protocol}//)`)
  if (u.hostname === '') throw new Error('--database-url must name the server\'s host: postgres://user:password@host:port/')
  u.pathname = '/'
  u.hash = ''
  return u.toString()
}

/**
 * Members' database names: `parley_<org>` on the folder's own server; on a shared server, the folder's name and a
 * random tag between, so that two networks on one server (or a new folder where an old one was) never share one.
 */
function databasePrefix(L: Layout, shared: boolean): string {
  if (!shared) return 'parley_'
  const name = basename(L.root).toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 24) || 'network'
  return `parley_${name}_${randomBytes(3).toString('hex')}_`
}

/** The URL the server is reached at, with the password: a managed one on loopback, or the user's. */
export function serverUrlOf(r: Exclude<DatabaseRecord, { engine: 'sqljs' }>): string {
  if (!r.managed) return r.url
  return `postgres://${encodeURIComponent(r.user)}:${encodeURIComponent(r.password)}@127.0.0.1:${r.port}/`
}

/** A member's database name: letters, digits and `_` only, so it needs no quoting anywhere. */
export function memberDatabase(r: Exclude<DatabaseRecord, { engine: 'sqljs' }>, org: string): string {
  return `${r.prefix}${org.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`
}

/** What a member's config says of its database: nothing for sql.js (the default), its URL for PostgreSQL. */
export function memberDatabaseConfig(r: DatabaseRecord, org: string): { type: 'postgres'; url: string } | undefined {
  if (r.engine === 'sqljs') return undefined
  return { type: 'postgres', url: withDatabase(serverUrlOf(r), memberDatabase(r, org)) }
}

/**
 * The whole URL of a member's PostgreSQL database, password included, for a test or a script that connects to it:
 * read from the member's config in the state folder (mode 0600), as the admin token is (network/admin-auth.ts);
 * undefined for a member on sql.js.
 */
export function memberDatabaseUrl(L: Layout, org: string): string | undefined {
  const cfg = JSON.parse(readFileSync(L.member(org).config, 'utf8')) as { database?: { type?: string; url?: string } }
  return cfg.database?.type === 'postgres' ? cfg.database.url : undefined
}

export function describeDatabase(r: DatabaseRecord): DatabaseDescription {
  if (r.engine === 'sqljs') return { engine: 'sqljs' }
  return { engine: 'postgres', managed: r.managed, server: withoutPassword(serverUrlOf(r)) }
}
