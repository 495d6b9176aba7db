/**
 * Measures the network foundation: seconds from start to ready with N members, and the resident memory of
 * every process once idle. Prints a table, then one JSON line. `npx tsx scripts/measure-network.ts [members]`
 */
import { rmSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startNetwork } from '../network/network.js'
import { processMemory, sleep } from '../network/process.js'

const members = Number(process.argv[2] ?? 3)
const dir = mkdtempSync(join(tmpdir(), 'parley-measure-'))
const net = await startNetwork({ dir, members })
try {
  await sleep(5000)
  const rss = Object.fromEntries(net.processes.map((p) => [p.name, Math.round(processMemory(p.pid).rss / 1024 / 1024)]))
  console.log(`ready in ${net.startupSeconds.toFixed(1)} s with ${members} members`)
  for (const [name, mib] of Object.entries(rss)) console.log(`  ${name.padEnd(8)} ${mib} MiB RSS at idle`)
  console.log(JSON.stringify({ members, readySeconds: Number(net.startupSeconds.toFixed(2)), idleRssMiB: rss }))
} finally {
  await net.stop()
  rmSync(dir, { recursive: true, force: true })
}
