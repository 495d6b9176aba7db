import { spawn } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isAlive } from '../process.js'
import type { PostgresBinaries } from './binaries.js'
import type { RunAs } from './os-user.js'

/** The process name of a network's PostgreSQL server in pids.json and in the controls (`network -- kill postgres`). */
export const POSTGRES_PROCESS = 'postgres'
/**
 * Connections the server accepts: each member holds a pool of its own, and the default (100) is reached by a
 * network of some ten members; a slot costs the server a few hundred KiB of shared memory.
 */
export const MAX_CONNECTIONS = 400

/** A managed server's credentials and port, as the folder's database record keeps them. */
export interface ManagedServer {
  port: number
  user: string
  password: string
}

/** Whether `data` holds a cluster initdb completed (PG_VERSION is among the last files it writes). */
export function hasCluster(data: string): boolean {
  return existsSync(join(data, 'PG_VERSION'))
}

/**
 * Creates the cluster in `data` (initdb) unless one is there: the superuser and its password (scram-sha-256 for every
 * connection, so only the members, given the password in their config, log in), UTF-8 without a locale (sorting by
 * bytes, as sql.js does). Under root the folder is owned by the server's account, as PostgreSQL requires. A folder
 * initdb left incomplete (a start killed during it) held no member's data yet: it is emptied and made again.
 */
export async function ensureCluster(bin: PostgresBinaries, data: string, server: ManagedServer, account: RunAs, log: (line: string) => void): Promise<boolean> {
  if (hasCluster(data)) return false
  rmSync(data, { recursive: true, force: true })
  mkdirSync(data, { recursive: true, mode: 0o700 })
  chmodSync(data, 0o700)
  if (account) chownSync(data, account.uid, account.gid)
  // initdb reads the password from a file; kept beside the data, readable by the server's account alone, and removed.
  const pwfile = join(data, '..', 'initdb.pw')
  writeFileSync(pwfile, `${server.password}\n`, { mode: 0o600 })
  if (account) chownSync(pwfile, account.uid, account.gid)
  const t0 = Date.now()
  try {
    await runInitdb(bin.initdb, ['--pgdata', data, '--auth', 'scram-sha-256', '--username', server.user, '--pwfile', pwfile, '--encoding', 'UTF8', '--no-locale'], account)
  } finally {
    rmSync(pwfile, { force: true })
  }
  log(`created the PostgreSQL cluster in ${data} in ${((Date.now() - t0) / 1000).toFixed(2)} s`)
  return true
}

function runInitdb(initdb: string, args: string[], account: RunAs): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(initdb, args, { stdio: ['ignore', 'ignore', 'pipe'], ...(account ?? {}), env: { ...process.env, LC_ALL: 'C' } })
    let stderr = ''
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()))
    child.once('error', reject)
    child.once('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`initdb failed (${signal ?? `code ${code}`}): ${stderr.trim().split('\n').slice(-5).join(' | ')}`))))
  })
}

/** The server's arguments: loopback only, no Unix socket (nothing outside the folder is written), durable commits. */
export function postgresArgs(data: string, port: number): string[] {
  return [
    '-D', data,
    '-p', String(port),
    '-c', 'listen_addresses=127.0.0.1',
    '-c', 'unix_socket_directories=',
    '-c', `max_connections=${MAX_CONNECTIONS}`,
    // The defaults, said out loud: a member's 2xx means committed (issue: durability as before).
    '-c', 'fsync=on',
    '-c', 'synchronous_commit=on',
  ]
}

/**
 * Removes a postmaster.pid that no running server of `data` holds. After a SIGKILL of the whole network the file
 * stays; PostgreSQL ignores it when its PID is gone, but refuses to start when that PID now belongs to another
 * process of the same account (PIDs are reused, soon in a container). A live server of this very folder is left
 * alone and named: starting a second one would be refused anyway, by PostgreSQL itself.
 */
export function clearStalePid(data: string): void {
  const file = join(data, 'postmaster.pid')
  if (!existsSync(file)) return
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0])
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid) && servesFolder(pid, data)) {
    throw new Error(`PostgreSQL still runs on ${data} as pid ${pid}, which no network command recorded: stop it (kill -INT ${pid}) first`)
  }
  rmSync(file, { force: true })
}

function servesFolder(pid: number, data: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(data)
  } catch {
    // No /proc to tell: assume it does, and let the user decide.
    return true
  }
}
