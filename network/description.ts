import { closeSync, existsSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs'
import { writeFileAtomicSync } from '../node/core/atomic-file.js'
import { isAlive, signalPid, stopPid } from './process.js'
import { POSTGRES_PROCESS } from './postgres/cluster.js'
import type { DatabaseDescription } from './startup/database.js'

/** `<dir>/network.json`: the one description that tests, scripts and users read (its shape is in docs/operations.md). */
export interface NetworkDescription {
  chain: { rpc: string; chainId: number; contract: string; firstBlock: number }
  ipfs: { api: string; gateway: string }
  /** Where the members keep their state; absent in a description written before the engine could be chosen (sql.js). */
  database?: DatabaseDescription
  members: MemberDescription[]
}

export interface MemberDescription {
  org: string
  node: string
  did: string
  api: string
  /** Events over WebSockets: `ws://host:port/ws` (the namespace comes with each start or as `?namespace=`). */
  ws: string
  /**
   * The web console (`http://host:port/ui/`), served by the node from its build (network/build-console.ts). Optional: a
   * network.json without a console has none.
   */
  ui?: string
  /**
   * The interactive page of the member's API description (`http://host:port/api`, Swagger UI), as FireFly's CLI
   * prints for each member; the description itself is at `/api/openapi.json`. Optional, as `ui`.
   */
  apiPage?: string
  p2p: string
  /** The member's signing address (lowercase), as FireFly calls an org's key. */
  key: string
  /** Its PostgreSQL database's URL, without the password (the member's config.json has the whole URL); none on sql.js. */
  database?: string
}

export function readDescription(file: string): NetworkDescription | undefined {
  if (!existsSync(file)) return undefined
  return JSON.parse(readFileSync(file, 'utf8')) as NetworkDescription
}

/** Writes `value` as JSON so that a crash leaves the old file or the new one, never half of one, and durably. */
export function writeJsonAtomic(file: string, value: unknown): void {
  writeFileAtomicSync(file, JSON.stringify(value, null, 2) + '\n')
}

/** Which processes a network started, so that `network:down` (or a test) can stop them by PID. */
export interface PidFile {
  orchestrator?: number
  processes: { name: string; pid: number }[]
}

/**
 * Stops a process the PID file names, by PID, and waits until it has gone. PostgreSQL is asked with SIGINT (a fast
 * shutdown: clients disconnected, a checkpoint written), since on SIGTERM it waits for every client to leave, a
 * user's psql session included; its checkpoint may take a while on a large database.
 */
export async function stopRecorded(p: { name: string; pid: number }, graceMs = 5000): Promise<void> {
  if (p.name !== POSTGRES_PROCESS) return stopPid(p.pid, graceMs)
  // A paused server (`pause postgres` stops its whole process group) lets its backends run again, or they would
  // never act on the shutdown.
  if (isAlive(p.pid)) signalPid(-p.pid, 'SIGCONT')
  return stopPid(p.pid, Math.max(graceMs, 30_000), 'SIGINT')
}

export function readPids(file: string): PidFile {
  if (!existsSync(file)) return { processes: [] }
  return JSON.parse(readFileSync(file, 'utf8')) as PidFile
}

const LOCK_STALE_MS = 10_000
const sleeper = new Int32Array(new SharedArrayBuffer(4))

/**
 * Changes the PID file under a lock (`pids.json.lock`, created exclusively): several processes write it, e.g. a
 * foreground `network:up` and a `network -- restart org1` in another terminal, and a read-modify-write of one must
 * not lose the other's change. A lock left by a process that died (or older than 10 s) is taken over.
 */
export function updatePids(file: string, change: (pids: PidFile) => PidFile): PidFile {
  const lock = `${file}.lock`
  const deadline = Date.now() + 30_000
  for (;;) {
    let fd: number | undefined
    try {
      fd = openSync(lock, 'wx')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    if (fd !== undefined) {
      try {
        writeSync(fd, String(process.pid))
        closeSync(fd)
        const next = change(readPids(file))
        // Replaced whole, so that no reader sees half of it, but not fsynced: after a power cut the processes it names
        // are gone anyway, and a network's start writes it once per process it starts (~10 ms each here).
        writeFileSync(`${file}.tmp`, JSON.stringify(next, null, 2) + '\n')
        renameSync(`${file}.tmp`, file)
        return next
      } finally {
        rmSync(lock, { force: true })
      }
    }
    if (lockIsStale(lock)) rmSync(lock, { force: true })
    else if (Date.now() > deadline) throw new Error(`${lock} has been held for 30 s; remove it if no network command is running`)
    else Atomics.wait(sleeper, 0, 0, 5)
  }
}

function lockIsStale(lock: string): boolean {
  try {
    const owner = Number(readFileSync(lock, 'utf8'))
    if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) return true
    if (!Number.isInteger(owner) || owner <= 0) return false
    try {
      process.kill(owner, 0)
      return false
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ESRCH'
    }
  } catch {
    return false
  }
}
