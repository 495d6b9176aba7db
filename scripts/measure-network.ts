/**
 * Measures the network foundation: seconds from start to ready with N members, the CPU time each process used
 * to get there (and how much of it on its main thread: the rest is V8 compiling and collecting on its own threads,
 * libuv's file and DNS work, Hardhat's EDR threads), and the resident memory of every process once idle. Prints the start's timestamped progress
 * lines, a table, then one JSON line. `npx tsx scripts/measure-network.ts [members]`
 */
import { rmSync, mkdtempSync } from 'node:fs'
import { loadavg } from 'node:os'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startNetwork } from '../network/network.js'
import { mainThreadCpuSeconds, processCpuSeconds, processMemory, sleep } from '../network/process.js'

const members = Number(process.argv[2] ?? 3)
const dir = mkdtempSync(join(tmpdir(), 'parley-measure-'))
// Other work on the machine slows a start down: say how busy it was.
const load = loadavg()[0]!
// What this process spends from the start to ready competes with the children; its own start-up before does not.
const beforeStart = process.cpuUsage()
const net = await startNetwork({ dir, members, log: (line) => console.log(`  ${line}`) })
try {
  const cpu = Object.fromEntries(net.processes.map((p) => [p.name, Number(processCpuSeconds(p.pid).toFixed(2))]))
  const mainThreadCpu = Object.fromEntries(net.processes.map((p) => [p.name, Number(mainThreadCpuSeconds(p.pid).toFixed(2))]))
  const during = process.cpuUsage(beforeStart)
  cpu.orchestratorDuringStart = Number(((during.user + during.system) / 1e6).toFixed(2))
  cpu.orchestrator = Number((process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6).toFixed(2))
  await sleep(5000)
  const rss = Object.fromEntries(net.processes.map((p) => [p.name, Math.round(processMemory(p.pid).rss / 1024 / 1024)]))
  console.log(`ready in ${net.startupSeconds.toFixed(1)} s with ${members} members (1-minute load average before the start: ${load.toFixed(2)})`)
  for (const [name, mib] of Object.entries(rss)) {
    console.log(`  ${name.padEnd(8)} ${String(cpu[name]?.toFixed(2)).padStart(5)} s CPU to ready (${mainThreadCpu[name]?.toFixed(2)} s on its main thread)  ${mib} MiB RSS at idle`)
  }
  console.log(`  orchestrator ${cpu.orchestrator} s CPU (this process, including its own start-up; ${cpu.orchestratorDuringStart} s of it from the start to ready)`)
  console.log(JSON.stringify({ members, readySeconds: Number(net.startupSeconds.toFixed(2)), loadAverage: Number(load.toFixed(2)), cpuSecondsToReady: cpu, mainThreadCpuSecondsToReady: mainThreadCpu, idleRssMiB: rss }))
} finally {
  await net.stop()
  rmSync(dir, { recursive: true, force: true })
}
