/**
 * The CPU this benchmark process spends during a phase, as a share of one core over the phase's wall time. On a
 * small machine the client competes with the nodes it measures; this says how much it took from them.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { CLOCK_TICKS_PER_SECOND, mainThreadCpuSeconds, processAndReapedCpuSeconds, processCpuSeconds, processMemory, statFields } from '../../network/process.js'

export interface CpuFigure {
  /** User plus system CPU over wall time, percent of one core (above 100 when more than one thread ran). */
  pctOfCore: number
  cpuSeconds: number
  wallSeconds: number
}

export function startCpu(): { stop(): CpuFigure } {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  return {
    stop(): CpuFigure {
      const d = process.cpuUsage(cpu0)
      const wallSeconds = (performance.now() - t0) / 1000
      const cpuSeconds = (d.user + d.system) / 1e6
      return { pctOfCore: (100 * cpuSeconds) / Math.max(1e-3, wallSeconds), cpuSeconds, wallSeconds }
    },
  }
}

export function fmtCpu(c: CpuFigure): string {
  return `${c.pctOfCore.toFixed(1)} % of one core (${c.cpuSeconds.toFixed(2)} s CPU over ${c.wallSeconds.toFixed(2)} s)`
}

/** A /proc reading of a process, NaN once the process is gone. */
function unlessGone(read: (pid: number) => number): (pid: number) => number {
  return (pid) => {
    try {
      return read(pid)
    } catch {
      return NaN
    }
  }
}

/** CPU seconds a process (or only its main thread) has used so far; NaN once it is gone. */
const ownCpuSecondsOf = unlessGone(processCpuSeconds)
const mainCpuSecondsOf = unlessGone(mainThreadCpuSeconds)
const familyCpuSecondsOf = unlessGone(processAndReapedCpuSeconds)

/**
 * A process's CPU so far; for PostgreSQL's postmaster, with that of the processes it forked (a backend per
 * connection, the WAL writer, the checkpointer, the autovacuum workers): the postmaster itself does next to nothing.
 * Those alive are read one by one; those gone, as the kernel adds them to the postmaster once it reaped them (an
 * autovacuum worker lives a fraction of a second: read one by one, most were missed, ~9 % of a core in a broadcast run).
 */
function cpuSecondsOf(pid: number): number {
  if (commOf(pid) !== 'postgres') return ownCpuSecondsOf(pid)
  let sum = familyCpuSecondsOf(pid)
  for (const child of childrenOf(pid)) {
    const c = ownCpuSecondsOf(child)
    if (Number.isFinite(c)) sum += c
  }
  return sum
}

function commOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
  } catch {
    return undefined
  }
}

function childrenOf(pid: number): number[] {
  const out: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (Number(statFields(readFileSync(`/proc/${entry}/stat`, 'utf8'))[1]) === pid) out.push(Number(entry))
    } catch {
      // Gone since the listing.
    }
  }
  return out
}

/** The CPU other processes (a server under test, the network) spend during a phase, summed, as % of one core. */
export function startProcessCpu(pids: readonly number[]): { stop(): number } {
  const before = pids.map(cpuSecondsOf)
  const t0 = performance.now()
  return {
    stop(): number {
      const wallSeconds = (performance.now() - t0) / 1000
      // A process gone mid-phase cannot be read: count none of its time rather than fail the figure.
      const used = pids.reduce((sum, pid, i) => {
        const d = cpuSecondsOf(pid) - before[i]!
        return Number.isFinite(d) ? sum + Math.max(0, d) : sum
      }, 0)
      return (100 * used) / Math.max(1e-3, wallSeconds)
    },
  }
}

/**
 * CPU seconds each named process spends during a phase. Unlike a rate, CPU per unit of work hardly moves when
 * something else shares the machine, so it is the figure to compare a change by. A process that could not be read at
 * both ends (gone mid-phase) has NaN for what was not read, which the figures print as null rather than as nothing used.
 */
export function startEachProcessCpu(processes: readonly { name: string; pid: number }[]): { stop(): ProcessCpu[] } {
  const before = processes.map((p) => ({ all: cpuSecondsOf(p.pid), main: mainCpuSecondsOf(p.pid) }))
  return {
    stop: () =>
      processes.map((p, i) => {
        const cpuSeconds = Math.max(0, cpuSecondsOf(p.pid) - before[i]!.all)
        // Read after the whole process: if it ended in between, this is NaN, not all of its time given to helpers.
        const mainSeconds = Math.min(cpuSeconds, Math.max(0, mainCpuSecondsOf(p.pid) - before[i]!.main))
        return { name: p.name, cpuSeconds, mainSeconds }
      }),
  }
}

/**
 * A process's CPU over a phase, and how much of it its main thread used. In a member node the rest is mostly V8's
 * helpers (its optimising compiler, which runs most in a fresh process, and its garbage collector), then libuv's file
 * writes and syncs and the node's workers.
 */
export interface ProcessCpu {
  name: string
  cpuSeconds: number
  mainSeconds: number
}

/** Busy CPU seconds of the whole machine so far, all cores together, from the first line of /proc/stat. */
function machineBusySeconds(): number {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!
    // cpu user nice system idle iowait irq softirq steal ...; guest time is already inside user and nice.
    const t = line.trim().split(/\s+/).slice(1, 9).map(Number)
    const total = t.reduce((a, b) => a + b, 0)
    return (total - t[3]! - t[4]!) / CLOCK_TICKS_PER_SECOND
  } catch {
    return NaN
  }
}

/**
 * CPU the whole machine spends during a phase, % of one core: less what the benchmark accounts for, it is what
 * anything else (another engineer's tests, say) took from the run.
 */
export function startMachineCpu(): { stop(): number } {
  const before = machineBusySeconds()
  const t0 = performance.now()
  return {
    stop(): number {
      const wallSeconds = (performance.now() - t0) / 1000
      return (100 * (machineBusySeconds() - before)) / Math.max(1e-3, wallSeconds)
    },
  }
}

/** The machine's share beyond what was measured per process; never below 0 (the counters tick in 10 ms steps). */
export function restOf(machinePct: number, ...accounted: number[]): number {
  return Math.max(0, machinePct - accounted.reduce((a, b) => a + b, 0))
}

/** A process's resident set in MiB, or null when it cannot be read (gone, or no pid). */
export function rssMiB(pid: number | undefined): number | null {
  if (pid === undefined) return null
  try {
    const r = processMemory(pid).rss
    return Number.isFinite(r) ? r / (1024 * 1024) : null
  } catch {
    return null
  }
}
