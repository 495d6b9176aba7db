import type pg from 'pg'

/**
 * pg, loaded when a connection is first made: the network command and every start load this module (for the URL
 * helpers below), and a network on sql.js never connects; loading pg costs ~50 ms of CPU (Node's fetch with it).
 */
export async function loadPg(): Promise<typeof pg> {
  return (await import('pg')).default
}

/** PostgreSQL's code for CREATE DATABASE of a name that exists: another start created it first. */
const DUPLICATE_DATABASE = '42P04'
/** The database every server has, which an administrative connection uses when the URL names none. */
const MAINTENANCE_DATABASE = 'postgres'

/** `url` naming `database` instead (the server's URL, or a member's). */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url)
  u.pathname = `/${encodeURIComponent(database)}`
  return u.toString()
}

/** `url` without its password, for what is printed or written where others read it (network.json, logs). */
export function withoutPassword(url: string): string {
  const u = new URL(url)
  u.password = ''
  return u.toString()
}

/** Runs `work` on one connection to the server's maintenance database (or the one the URL names), then closes it. */
export async function withServer<T>(serverUrl: string, work: (c: pg.Client) => Promise<T>, timeoutMs = 5000): Promise<T> {
  const u = new URL(serverUrl)
  const database = u.pathname.length > 1 ? decodeURIComponent(u.pathname.slice(1)) : MAINTENANCE_DATABASE
  const { Client } = await loadPg()
  const client = new Client({ connectionString: withDatabase(serverUrl, database), connectionTimeoutMillis: timeoutMs })
  // A server that goes away mid-call fails the query; without a listener the same error would also end this process.
  client.on('error', () => undefined)
  try {
    await client.connect()
    return await work(client)
  } finally {
    await client.end().catch(() => undefined)
  }
}

/** Whether the server accepts a login now (the readiness check of a managed server). */
export async function acceptsLogin(serverUrl: string): Promise<boolean> {
  try {
    return await withServer(serverUrl, async (c) => (await c.query('SELECT 1 AS ok')).rows.length === 1, 2000)
  } catch {
    return false
  }
}

/** Databases created at once, each on a connection of its own: CREATE DATABASE is mostly waiting on the disk. */
const CREATE_CONCURRENTLY = 4

/**
 * Creates each database of `names` that the server lacks; answers those it created. A member runs its own
 * migrations in its database (node/db): an empty one is all it needs. CREATE DATABASE cannot run inside a
 * transaction, and writes its copy of template1 through the WAL with an fsync: a few at once, on connections of their
 * own (3 in 0.5 s here, against 0.3-0.6 s each one after the other). One that another start creates meanwhile
 * counts as there.
 */
export async function ensureDatabases(serverUrl: string, names: readonly string[]): Promise<string[]> {
  const { escapeIdentifier } = await loadPg()
  const there = await withServer(serverUrl, async (c) => {
    const { rows } = await c.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname = ANY($1::text[])', [names])
    return new Set(rows.map((r) => r.datname))
  })
  const missing = names.filter((n) => !there.has(n))
  const created: string[] = []
  for (let i = 0; i < missing.length; i += CREATE_CONCURRENTLY) {
    await Promise.all(
      missing.slice(i, i + CREATE_CONCURRENTLY).map((name) =>
        withServer(serverUrl, async (c) => {
          try {
            await c.query(`CREATE DATABASE ${escapeIdentifier(name)}`)
            created.push(name)
          } catch (err) {
            if ((err as { code?: string }).code !== DUPLICATE_DATABASE) throw new Error(`could not create the database ${name} on ${withoutPassword(serverUrl)}: ${(err as Error).message}`)
          }
        }),
      ),
    )
  }
  return created.sort((a, b) => names.indexOf(a) - names.indexOf(b))
}
