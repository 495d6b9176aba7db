/**
 * The bare baseline: the broadcast throughput run's POSTs (same client, bodies, count and concurrency) sent to
 * `bare-server.ts` instead of a member, in a child process of its own as a member node is. Its rate is the
 * ceiling this machine and this client allow; the broadcast accept rate is judged against it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, mkdirSync, openSync } from 'node:fs'
import { dirname } from 'node:path'
import { layout } from '../../network/layout.js'
import { projectRoot, tsEntry } from '../../network/process.js'
import { restOf, startCpu, startMachineCpu, startProcessCpu, type CpuFigure } from './cpu.js'
import { acceptRate, reportFailures, sendConcurrent } from './send.js'
import { Interrupted, throwIfAborted, type BenchContext } from './types.js'

const READY_TIMEOUT_MS = 30_000
const WARMUP_MESSAGES = 20

export interface BareResult {
  acceptedPerSec: number
  seconds: number
  accepted: number
  failures: number
  /** This (the sending) process. */
  cpu: CpuFigure
  /** The bare server, % of one core: near 100 means it, not the client or the machine, set the rate. */
  serverCpuPct: number
  /** The network's processes meanwhile, % of one core: what the idle network took from the baseline. */
  networkCpuPct: number
  /** Everything else on the machine meanwhile, % of one core. */
  restCpuPct: number
  /** The same run once more, right after: the server warmed up as the member is for its warm run. */
  warmAcceptedPerSec: number
}

/** The port the server prints once it listens; rejects if it exits, stays silent too long, or the run is aborted. */
function readyPort(child: ChildProcess, signal: AbortSignal): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let out = ''
    const done = (err: Error | undefined, port?: number): void => {
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
      child.off('exit', onExit)
      child.stdout?.off('data', onData)
      // The server writes nothing more; an open pipe would keep this process's event loop alive.
      child.stdout?.destroy()
      if (err) reject(err)
      else resolve(port!)
    }
    const onData = (chunk: Buffer): void => {
      out += chunk.toString('utf8')
      const nl = out.indexOf('\n')
      if (nl < 0) return
      let port: unknown
      try {
        port = (JSON.parse(out.slice(0, nl)) as { port?: unknown }).port
      } catch {
        port = undefined
      }
      if (typeof port === 'number' && port > 0) done(undefined, port)
      else done(new Error(`the bare server printed ${JSON.stringify(out.slice(0, nl))}, not its port`))
    }
    const onExit = (code: number | null): void => done(new Error(`the bare server exited (${code}) before listening`))
    const onAbort = (): void => done(new Interrupted())
    const timer = setTimeout(() => done(new Error(`the bare server did not listen within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS)
    child.stdout?.on('data', onData)
    child.once('exit', onExit)
    signal.addEventListener('abort', onAbort, { once: true })
    if (signal.aborted) onAbort()
  })
}

/**
 * Starts `script` (a bare comparison server of this folder) as a detached child of its own, as a member node is,
 * logging to `logs/<logName>.log`, listed among the benchmark's children at once; resolves with its PID and the port
 * it printed. The caller stops it with `ctx.children.stop(pid)`; a server that fails to listen is stopped here.
 */
export async function startBareProcess(ctx: BenchContext, script: string, logName: string, args: string[] = []): Promise<{ pid: number; port: number }> {
  const { child, pid } = spawnBenchProcess(ctx, script, logName, args)
  child.unref()
  try {
    return { pid, port: await readyPort(child, ctx.signal) }
  } catch (err) {
    await ctx.children.stop(pid)
    throw err
  }
}

/**
 * Starts `script` of this folder under tsx as a detached child of its own, as a member node is (a Ctrl-C reaches the
 * benchmark, which stops it), its stdout piped to the caller and its stderr to `logs/<logName>.log`, and lists it
 * among the benchmark's children at once.
 */
export function spawnBenchProcess(ctx: BenchContext, script: string, logName: string, args: string[] = []): { child: ChildProcess; pid: number } {
  const logFile = layout(ctx.dir).log(logName)
  mkdirSync(dirname(logFile), { recursive: true })
  const fd = openSync(logFile, 'a')
  let child: ChildProcess
  try {
    child = spawn(process.execPath, tsEntry(script, args), { cwd: projectRoot, stdio: ['ignore', 'pipe', fd], detached: true })
  } finally {
    closeSync(fd)
  }
  const pid = child.pid
  if (pid === undefined) throw new Error(`could not start ${script}`)
  ctx.children.add(pid)
  return { child, pid }
}

/** Starts the bare server, drives it like the throughput run, and stops it by PID whatever happens. */
export async function runBareBaseline(ctx: BenchContext, messages: number, concurrency: number): Promise<BareResult> {
  const { pid, port } = await startBareProcess(ctx, 'scripts/bench/bare-server.ts', 'bench-bare-server')
  try {
    const url = `http://127.0.0.1:${port}/messages`
    // As the broadcast run warms up: sockets, JIT, sql.js's first pages; not measured.
    const warm = await sendConcurrent(url, 'warmup', WARMUP_MESSAGES, 10, ctx.signal)
    throwIfAborted(ctx.signal)
    reportFailures(ctx, 'bare warm-up', warm)
    const machineCpu = startMachineCpu()
    const cpu = startCpu()
    const serverCpu = startProcessCpu([pid])
    const networkCpu = startProcessCpu(ctx.processes.map((p) => p.pid))
    const run = await sendConcurrent(url, 'throughput', messages, concurrency, ctx.signal)
    const cpuFigure = cpu.stop()
    const serverCpuPct = serverCpu.stop()
    const networkCpuPct = networkCpu.stop()
    const restCpuPct = restOf(machineCpu.stop(), cpuFigure.pctOfCore, serverCpuPct, networkCpuPct)
    throwIfAborted(ctx.signal)
    reportFailures(ctx, 'bare', run)
    const rate = acceptRate(run)
    const again = await sendConcurrent(url, 'throughput-warm', messages, concurrency, ctx.signal)
    throwIfAborted(ctx.signal)
    reportFailures(ctx, 'bare, warm', again)
    return {
      acceptedPerSec: rate.perSec,
      seconds: rate.seconds,
      accepted: run.sent.length,
      failures: run.failures,
      cpu: cpuFigure,
      serverCpuPct,
      networkCpuPct,
      restCpuPct,
      warmAcceptedPerSec: acceptRate(again).perSec,
    }
  } finally {
    await ctx.children.stop(pid)
  }
}
