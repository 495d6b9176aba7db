import { spawn } from 'node:child_process'
import { openSync, closeSync, mkdirSync, readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { sleep } from '../node/core/backoff.js'

/** The project root, so that child processes find `tsx` and `node_modules` wherever they were started from. */
export const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** Arguments that make `node` run a TypeScript entry point of this project. */
export function tsEntry(relativePath: string, args: string[] = []): string[] {
  return ['--import', 'tsx', resolve(projectRoot, relativePath), ...args]
}

export interface SpawnedProcess {
  name: string
  pid: number
  logFile: string
  /** Resolves with the exit code (or null when killed by a signal) once the process has gone. */
  exited: Promise<number | null>
}

/**
 * Starts a process in its own process group, with stdout and stderr appended to a log file.
 * The process survives its parent (so `network:up --detach` can return); stopping it is the caller's job,
 * by PID, through `stopPid`.
 */
export function spawnLogged(opts: {
  name: string
  command: string
  args: string[]
  logFile: string
  env?: NodeJS.ProcessEnv
  cwd?: string
  /** The OS account to run as (only root may choose one): PostgreSQL refuses to run as root. */
  account?: { uid: number; gid: number }
}): SpawnedProcess {
  mkdirSync(dirname(opts.logFile), { recursive: true })
  const fd = openSync(opts.logFile, 'a')
  const child = spawn(opts.command, opts.args, {
    cwd: opts.cwd ?? projectRoot,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', fd, fd],
    detached: true,
    ...(opts.account ?? {}),
  })
  closeSync(fd)
  // A command that cannot be run (missing, not executable) is reported by the throw below; its 'error' event, which
  // comes a tick later, would otherwise end this process as an unhandled one.
  child.once('error', () => {})
  if (child.pid === undefined) throw new Error(`could not start ${opts.name} (${opts.command})`)
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)))
  child.unref()
  return { name: opts.name, pid: child.pid, logFile: opts.logFile, exited }
}

/**
 * Whether the process is still there. A zombie (exited, not yet reaped: its parent is gone and the reaper of this
 * container may never collect it) counts as gone.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  return processState(pid) !== 'Z'
}

/**
 * The process's state letter from /proc (Linux): `R` running, `S` sleeping, `T` stopped (SIGSTOP: a paused member),
 * `Z` zombie...; undefined when the process is gone or /proc cannot tell.
 */
export function processState(pid: number): string | undefined {
  try {
    return statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'))[0]
  } catch {
    return undefined
  }
}

/** Whether the process is stopped by a signal (SIGSTOP), as `pause` leaves a member. */
export function isPaused(pid: number): boolean {
  const s = processState(pid)
  return s === 'T' || s === 't'
}

/** Sends `signal` to the process, ignoring a process that has already gone. */
export function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err
  }
}

/** `signal` (SIGTERM unless told, and SIGCONT, for a paused process), then SIGKILL after `graceMs`; resolves once the PID is gone. */
export async function stopPid(pid: number, graceMs = 5000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!isAlive(pid)) return
  signalPid(pid, signal)
  // A paused (SIGSTOPped) process handles SIGTERM only once it runs again: stopping undoes a pause.
  signalPid(pid, 'SIGCONT')
  const deadline = Date.now() + graceMs
  while (isAlive(pid) && Date.now() < deadline) await sleep(25)
  if (isAlive(pid)) {
    signalPid(pid, 'SIGKILL')
    while (isAlive(pid)) await sleep(10)
  }
}

export { sleep }

/** Polls `check` until it returns true; the error names `what` and the last failure when time runs out. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  { timeoutMs = 30_000, intervalMs = 100 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      if (await check()) return
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? `: ${last.message}` : ''
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`)
    }
    await sleep(intervalMs)
  }
}

/**
 * A port that was free on 127.0.0.1 a moment ago, below the OS's ephemeral range where it can: a port the OS hands
 * out itself (listen(0)) is one it also gives to outgoing connections, so a member restarted on its port could find
 * it taken by some process's connection meanwhile. `span` more ports after it are kept below that range too.
 */
export async function freePort(span = 0): Promise<number> {
  const window = listeningWindow()
  if (window !== undefined && window.to - span > window.from) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = window.from + Math.floor(Math.random() * (window.to - span - window.from))
      if (await isPortFree(port)) return port
    }
  }
  return osPickedPort()
}

/** Ports below the ephemeral range (Linux: /proc/sys/net/ipv4/ip_local_port_range), or undefined where it is unknown or too low. */
function listeningWindow(): { from: number; to: number } | undefined {
  let ephemeralLow: number
  try {
    ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
  } catch {
    return undefined
  }
  const from = 10_000
  return Number.isInteger(ephemeralLow) && ephemeralLow - from >= 4_096 ? { from, to: ephemeralLow } : undefined
}

function osPickedPort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer()
    srv.once('error', rej)
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address()
      const port = typeof addr === 'object' && addr ? addr.port : 0
      srv.close(() => res(port))
    })
  })
}

async function isPortFree(port: number): Promise<boolean> {
  try {
    await assertPortFree(port, 'probe')
    return true
  } catch (err) {
    if (err instanceof PortBusyError) return false
    throw err
  }
}

export class PortBusyError extends Error {
  constructor(readonly port: number, readonly purpose: string, readonly host = '127.0.0.1') {
    super(`port ${port} (${purpose}) is already in use on ${host}`)
  }
}

/** Throws a PortBusyError naming the port when something already listens on it (on `host`, loopback by default). */
export function assertPortFree(port: number, purpose: string, host = '127.0.0.1'): Promise<void> {
  return new Promise((res, rej) => {
    const srv = createServer()
    srv.once('error', (err: NodeJS.ErrnoException) =>
      rej(err.code === 'EADDRINUSE' || err.code === 'EACCES' ? new PortBusyError(port, purpose, host) : err),
    )
    srv.listen(port, host, () => srv.close(() => res()))
  })
}

/** A process's resident memory now (VmRSS) and at its peak so far (VmHWM), in bytes, from /proc (Linux). */
export function processMemory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') }
}

/** CPU time (user + system) a process has used so far, in seconds, from /proc (Linux). */
export function processCpuSeconds(pid: number): number {
  return cpuSecondsOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))
}

/**
 * CPU seconds of a process's main thread alone (its task whose id is the pid). What the process used beyond it ran on
 * its other threads: in a Node process, V8's compiler and garbage collector helpers, libuv's pool and any workers.
 */
export function mainThreadCpuSeconds(pid: number): number {
  return cpuSecondsOfStat(readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8'))
}

/**
 * CPU seconds of the children a process has reaped (waited for), as the kernel adds them to it: a server's short-lived
 * workers (PostgreSQL's autovacuum workers) are counted there once gone, whereas reading each child misses one that
 * comes and goes between two readings.
 */
export function reapedChildrenCpuSeconds(pid: number): number {
  return reapedCpuSecondsOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))
}

/** A process's own CPU seconds and those of the children it reaped, from one reading of its stat. */
export function processAndReapedCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  return cpuSecondsOfStat(stat) + reapedCpuSecondsOfStat(stat)
}

/**
 * The fields of a /proc stat line after the command name, which may hold spaces: [0] is the state (field 3), [1] the
 * parent's pid (field 4), [11] and [12] utime and stime (14, 15), [13] and [14] cutime and cstime (16, 17).
 */
export function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
}

function cpuSecondsOfStat(stat: string): number {
  const fields = statFields(stat)
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND
}

function reapedCpuSecondsOfStat(stat: string): number {
  const fields = statFields(stat)
  return (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS_PER_SECOND
}
/** USER_HZ: 100 on every Linux Node runs on. */
export const CLOCK_TICKS_PER_SECOND = 100
