import { spawn } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fsyncDirSync } from '../../node/core/atomic-file.js'
import { isAlive } from '../process.js'
import type { PostgresBinaries } from './binaries.js'
import type { RunAs } from './os-user.js'
import { copyTemplate, saveTemplate, templateDir, usableTemplate } from './template.js'
import { loadPg } from './databases.js'

/** The process name of a network's PostgreSQL server in pids.json and in the controls (`network -- kill postgres`). */
export const POSTGRES_PROCESS = 'postgres'
/**
 * Connections the server accepts: a member holds one or a few (its engine's, node/db), and tests and a user's psql
 * sessions come on top; PostgreSQL's default (100) would cap a network well below the 100 members `--members`
 * allows. Each slot costs the server some shared memory (its lock table grows with it), not a process.
 */
const MAX_CONNECTIONS = 300

/**
 * How often autovacuum visits each database, in seconds (PostgreSQL's default: 60). Each visit starts a worker
 * process, one per database in turn: one a second for 15 members, a few milliseconds of CPU each, more when a table
 * has grown by a tenth since its last ANALYZE (autovacuum_analyze_scale_factor), which a member's tables do every few
 * seconds under load. Every 5 s, the workers of a 3-member broadcast run took 2.5-2.9 s of CPU, ~10 % of a core while
 * the sender accepted (`bench -- --database postgres --only broadcast`, three alternating pairs, load 2.7-4.2): at
 * 15 s, 0.55-0.98 s, and messages confirmed on every member 558-645/s against 471-585/s in the same runs (0.85 of
 * sql.js's rate in each, against 0.67-0.81).
 */
const AUTOVACUUM_NAPTIME_SECONDS = 15

/** A managed server's credentials and port, as the folder's database record keeps them. */
export interface ManagedServer {
  port: number
  user: string
  password: string
}

/** Whether `data` holds a cluster initdb completed (PG_VERSION is among the last files it writes). */
function hasCluster(data: string): boolean {
  return existsSync(join(data, 'PG_VERSION'))
}

/**
 * Creates the cluster in `data` unless one is there, with the superuser and its password (scram-sha-256 for every
 * connection, so only the members, given the password in their config, log in), UTF-8 without a locale (sorting by
 * bytes, as sql.js does). From this account's template when it has one (template.ts): a copy, whose superuser gets
 * this server's password in single-user mode before it ever listens; otherwise by initdb, kept as the template for
 * the next network. Made beside `data` and renamed into place, so that a start killed half way leaves no half
 * cluster. Under root the folder is owned by the server's account, as PostgreSQL requires. Answers how it was made.
 */
export async function ensureCluster(bin: PostgresBinaries, data: string, server: ManagedServer, account: RunAs, log: (line: string) => void): Promise<'existing' | 'template' | 'initdb'> {
  if (hasCluster(data)) return 'existing'
  const next = `${data}.new`
  rmSync(data, { recursive: true, force: true })
  rmSync(next, { recursive: true, force: true })
  const t0 = Date.now()
  const template = templateDir(bin.postgres)
  const how = usableTemplate(template) ? 'template' : 'initdb'
  if (how === 'template') {
    await copyTemplate(template, next, account)
    const { escapeIdentifier, escapeLiteral } = await loadPg()
    const setPassword = `ALTER ROLE ${escapeIdentifier(server.user)} PASSWORD ${escapeLiteral(server.password)};\n`
    await runAs(bin.postgres, ['--single', '-D', next, '-c', 'listen_addresses=', '-c', 'unix_socket_directories=', 'postgres'], account, setPassword)
  } else {
    await initdb(bin, next, server, account)
    saveTemplate(next, template)
  }
  renameSync(next, data)
  fsyncDirSync(dirname(data))
  log(`created the PostgreSQL cluster in ${data} ${how === 'template' ? `from the template ${template}` : 'with initdb'} in ${((Date.now() - t0) / 1000).toFixed(2)} s`)
  return how
}

async function initdb(bin: PostgresBinaries, data: string, server: ManagedServer, account: RunAs): Promise<void> {
  mkdirSync(data, { recursive: true, mode: 0o700 })
  chmodSync(data, 0o700)
  if (account) chownSync(data, account.uid, account.gid)
  // initdb reads the password from a file; kept beside the data, readable by the server's account alone, and removed.
  const pwfile = join(dirname(data), 'initdb.pw')
  writeFileSync(pwfile, `${server.password}\n`, { mode: 0o600 })
  if (account) chownSync(pwfile, account.uid, account.gid)
  try {
    await runAs(bin.initdb, ['--pgdata', data, '--auth', 'scram-sha-256', '--username', server.user, '--pwfile', pwfile, '--encoding', 'UTF8', '--no-locale'], account)
  } finally {
    rmSync(pwfile, { force: true })
  }
}

/** Runs one of PostgreSQL's programs to its end as the server's account, `input` on its stdin (a secret stays off argv). */
function runAs(command: string, args: string[], account: RunAs, input = ''): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'ignore', 'pipe'], ...(account ?? {}), env: { ...process.env, LC_ALL: 'C' } })
    let stderr = ''
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()))
    child.once('error', reject)
    child.once('exit', (code, signal) => {
      if (code === 0 && !/\bERROR:/.test(stderr)) resolve()
      else reject(new Error(`${basename(command)} failed (${signal ?? `code ${code}`}): ${stderr.trim().split('\n').slice(-5).join(' | ')}`))
    })
    child.stdin.end(input)
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
    // A member prepares its statements once; PostgreSQL plans each for the table sizes its statistics last said, and
    // keeps that plan until an ANALYZE of a table it reads. A member starts with empty tables, where a scan of the
    // whole table is cheapest: until autovacuum analyzes them again, a batch's confirmation scans every message held
    // (10 ms a batch at 20,000 messages, against 2.5 ms by index). Checked every 15 s rather than every minute, a
    // hot table is analyzed within seconds of each tenth it grows by (autovacuum_analyze_scale_factor).
    '-c', `autovacuum_naptime=${AUTOVACUUM_NAPTIME_SECONDS}`,
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
