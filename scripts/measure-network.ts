/**
 * Measures the network foundation. First what a user waits for: the wall clock of `npm run network:up -- --detach`
 * with 3 members, from spawning npm to its exit (npm's own start-up, the launcher's checks and the command's loading
 * included), on a fresh temporary folder and free ports, each run stopped by `npm run network:down`; the median of
 * `--up-runs` runs (default 3). Then, in this process, seconds from start to ready with N members, the CPU time each
 * process used to get there (and how much of it on its main thread: the rest is V8 compiling and collecting on its
 * own threads, libuv's file and DNS work, Hardhat's EDR threads), and the resident memory of every process once idle.
 * Prints the start's timestamped progress lines, a table, then one JSON line.
 * With `--database postgres`, every start runs its members on the network's own PostgreSQL (a new cluster each: its
 * initdb included); the server's CPU and memory are its postmaster's alone.
 * `npm run measure -- [members] [--up-runs R] [--database sqljs|postgres]`
 */
import { spawn } from 'node:child_process'
import { rmSync, mkdtempSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { startNetwork } from '../network/network.js'
import { freeBasePort } from '../network/ports.js'
import { mainThreadCpuSeconds, processCpuSeconds, processMemory, projectRoot, sleep } from '../network/process.js'

const { values, positionals } = parseArgs({ options: { 'up-runs': { type: 'string', default: '3' }, database: { type: 'string', default: 'sqljs' } }, allowPositionals: true })
const database = values.database
if (database !== 'sqljs' && database !== 'postgres') throw new Error(`--database must be sqljs or postgres (got ${database})`)
const members = Number(positionals[0] ?? 3)
const upRuns = Number(values['up-runs'])
const UP_MEMBERS = 3

/** Runs `npm run <script> -- <args>` from the project root; answers its wall clock in seconds, failing on an error exit. */
function npmRun(script: string, args: string[]): Promise<number> {
  const started = performance.now()
  const child = spawn('npm', ['run', '--silent', script, '--', ...args], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (d: Buffer) => (output += d.toString()))
  child.stderr.on('data', (d: Buffer) => (output += d.toString()))
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => {
      const seconds = (performance.now() - started) / 1000
      if (code === 0) resolve(seconds)
      else reject(new Error(`npm run ${script} exited with ${code}:\n${output}`))
    })
  })
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

// Other work on the machine slows a start down: say how busy it was.
const upLoad = loadavg()[0]!
const upSeconds: number[] = []
for (let run = 0; run < upRuns; run++) {
  const upDir = mkdtempSync(join(tmpdir(), 'parley-measure-up-'))
  try {
    const base = await freeBasePort(UP_MEMBERS)
    const seconds = await npmRun('network:up', ['--detach', '--members', String(UP_MEMBERS), '--dir', upDir, '--base-port', String(base), '--database', database])
    upSeconds.push(seconds)
    console.log(`npm run network:up -- --detach --database ${database} (${UP_MEMBERS} members): ${seconds.toFixed(2)} s from the command to its exit`)
  } finally {
    await npmRun('network:down', ['--dir', upDir]).catch((err: Error) => console.error(err.message))
    rmSync(upDir, { recursive: true, force: true })
  }
}
if (upSeconds.length > 0) console.log(`  median of ${upSeconds.length}: ${median(upSeconds).toFixed(2)} s (1-minute load average before: ${upLoad.toFixed(2)})\n`)

const dir = mkdtempSync(join(tmpdir(), 'parley-measure-'))
const load = loadavg()[0]!
// What this process spends from the start to ready competes with the children; its own start-up before does not.
const beforeStart = process.cpuUsage()
const net = await startNetwork({ dir, members, database, log: (line) => console.log(`  ${line}`) })
try {
  const cpu = Object.fromEntries(net.processes.map((p) => [p.name, Number(processCpuSeconds(p.pid).toFixed(2))]))
  const mainThreadCpu = Object.fromEntries(net.processes.map((p) => [p.name, Number(mainThreadCpuSeconds(p.pid).toFixed(2))]))
  const during = process.cpuUsage(beforeStart)
  cpu.orchestratorDuringStart = Number(((during.user + during.system) / 1e6).toFixed(2))
  cpu.orchestrator = Number((process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6).toFixed(2))
  // At rest: a member collects its garbage once its loop has been quiet for a 2 s period after the start
  // (node/core/idle-gc.ts); in a 20-member network the last claims keep members busy for a few seconds after ready.
  await sleep(15_000)
  const rss = Object.fromEntries(net.processes.map((p) => [p.name, Math.round(processMemory(p.pid).rss / 1024 / 1024)]))
  console.log(`ready in ${net.startupSeconds.toFixed(1)} s with ${members} members (1-minute load average before the start: ${load.toFixed(2)})`)
  for (const [name, mib] of Object.entries(rss)) {
    console.log(`  ${name.padEnd(8)} ${String(cpu[name]?.toFixed(2)).padStart(5)} s CPU to ready (${mainThreadCpu[name]?.toFixed(2)} s on its main thread)  ${mib} MiB RSS at idle`)
  }
  console.log(`  orchestrator ${cpu.orchestrator} s CPU (this process, including its own start-up; ${cpu.orchestratorDuringStart} s of it from the start to ready)`)
  const memberRss = net.description.members.map((m) => rss[m.node]!)
  if (memberRss.length > 0) console.log(`  members: ${median(memberRss)} MiB RSS at idle (median), ${Math.max(...memberRss)} MiB at most`)
  console.log(
    JSON.stringify({
      members,
      database,
      readySeconds: Number(net.startupSeconds.toFixed(2)),
      loadAverage: Number(load.toFixed(2)),
      networkUpSeconds: upSeconds.map((s) => Number(s.toFixed(2))),
      networkUpLoadAverage: Number(upLoad.toFixed(2)),
      cpuSecondsToReady: cpu,
      mainThreadCpuSecondsToReady: mainThreadCpu,
      idleRssMiB: rss,
    }),
  )
} finally {
  await net.stop()
  rmSync(dir, { recursive: true, force: true })
}
