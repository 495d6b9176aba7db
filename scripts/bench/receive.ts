/**
 * The receiving member's CPU per broadcast message, measured where nothing else competes: receive-pipeline.ts in a
 * child process of its own, three times (the median is the figure, the range says how steady it was), each once the
 * network's processes are idle. A change to parsing, verifying, storing or confirming shows here as it is, while the
 * broadcast run's per-receiver figure also carries downloads, the chain follower and two cores' worth of contention.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { layout } from '../../network/layout.js'
import { spawnBenchProcess } from './bare.js'
import { startProcessCpu } from './cpu.js'
import { sleep } from './http.js'
import type { ReceiveFigures } from './receive-pipeline.js'
import { Interrupted, throwIfAborted, type BenchContext, type Scenario } from './types.js'

const RUNS = 3
/** 60 batches of 200: 4,000 warm-up messages, then 8,000 measured. */
const BATCHES = 60
/** The network counts as idle once its processes use less than this share of one core over a second. */
const IDLE_PCT = 10
const IDLE_WAIT_MS = 60_000

/**
 * Waits until the network's processes are idle (after an earlier scenario, members may still be checkpointing or
 * delivering), up to a limit; answers their last share of one core, so the caller can say when it ran anyway.
 */
async function waitForIdleNetwork(ctx: BenchContext): Promise<number> {
  const deadline = Date.now() + IDLE_WAIT_MS
  for (;;) {
    const cpu = startProcessCpu(ctx.processes.map((p) => p.pid))
    await sleep(1000, ctx.signal)
    throwIfAborted(ctx.signal)
    const pct = cpu.stop()
    if (pct < IDLE_PCT || Date.now() >= deadline) return pct
  }
}

async function runOnce(ctx: BenchContext, run: number): Promise<ReceiveFigures> {
  const dbDir = join(ctx.dir, `bench-receive-${run}`)
  const logFile = layout(ctx.dir).log('bench-receive')
  const { child, pid } = spawnBenchProcess(ctx, 'scripts/bench/receive-pipeline.ts', 'bench-receive', [dbDir, String(BATCHES)])
  const stdout = child.stdout
  if (stdout === null) throw new Error('the receive pipeline has no output pipe')
  let out = ''
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')))
  const onAbort = (): void => void ctx.children.stop(pid)
  ctx.signal.addEventListener('abort', onAbort, { once: true })
  try {
    // 'close', not 'exit': only then has all of its output been read.
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject)
      child.once('close', resolve)
    })
    throwIfAborted(ctx.signal)
    if (code !== 0) throw new Error(`the receive pipeline exited with ${code}; see ${logFile}`)
    return JSON.parse(out.trim().split('\n').at(-1) ?? '') as ReceiveFigures
  } finally {
    ctx.signal.removeEventListener('abort', onAbort)
    await ctx.children.stop(pid)
    rmSync(dbDir, { recursive: true, force: true })
  }
}

export const receiveScenario: Scenario = {
  name: 'receive',
  describe: "a received broadcast batch in one member process alone: pins ingested, payload parsed and verified, stored, confirmed",
  async run(ctx) {
    const runs: ReceiveFigures[] = []
    for (let i = 1; i <= RUNS; i++) {
      const busy = await waitForIdleNetwork(ctx)
      if (busy >= IDLE_PCT) ctx.log(`  the network's processes still used ${busy.toFixed(0)} % of one core after ${IDLE_WAIT_MS / 1000} s: run ${i} shares the machine`)
      const r = await runOnce(ctx, i)
      if (r.confirmed !== r.messages) throw new Error(`run ${i}: ${r.confirmed} of ${r.messages} messages confirmed`)
      ctx.log(`  run ${i}: ${r.messages} messages, CPU per message ${r.cpuMicrosPerMessage} µs (user ${r.userMicrosPerMessage}, system ${r.systemMicrosPerMessage}), wall ${r.wallMicrosPerMessage} µs`)
      runs.push(r)
    }
    if (ctx.signal.aborted) throw new Interrupted()
    const cpu = runs.map((r) => r.cpuMicrosPerMessage).sort((a, b) => a - b)
    const median = cpu[Math.floor(cpu.length / 2)]!
    ctx.log(`  receiver CPU per message: median ${median} µs over ${RUNS} runs (${cpu[0]}–${cpu.at(-1)})`)
    return { cpuMicrosPerMessage: median, runsCpuMicrosPerMessage: cpu, messagesPerRun: runs[0]!.messages, messagesPerBatch: 200 }
  },
}
