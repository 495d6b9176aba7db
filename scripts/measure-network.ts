/**
 * Measures the network foundation: seconds from start to ready with N members, and the resident memory of
 * every process once idle. Prints a table, then one JSON line. `npx tsx scripts/measure-network.ts [members]`
 */
import { readFileSync, rmSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startNetwork } from '../network/network.js'
import { sleep } from '../network/process.js'

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Math.round(Number(m[1]) / 1024) : NaN
}

const members = Number(process.argv[2] ?? 3)
const dir = mkdtempSync(join(tmpdir(), 'parley-measure-'))
const net = await startNetwork({ dir, members })
try {
  await sleep(5000)
  const rss = Object.fromEntries(net.processes.map((p) => [p.name, rssMiB(p.pid)]))
  console.log(`ready in ${net.startupSeconds.toFixed(1)} s with ${members} members`)
  for (const [name, mib] of Object.entries(rss)) console.log(`  ${name.padEnd(8)} ${mib} MiB RSS at idle`)
  console.log(JSON.stringify({ members, readySeconds: Number(net.startupSeconds.toFixed(2)), idleRssMiB: rss }))
} finally {
  await net.stop()
  rmSync(dir, { recursive: true, force: true })
}
