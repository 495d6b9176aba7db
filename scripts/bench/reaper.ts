/**
 * The benchmark's safety net: a small detached process that stops the benchmark's network if the benchmark
 * process dies without doing it (tsx SIGKILLs its child when a relayed Ctrl-C is not acknowledged within
 * ~60 ms, which a busy benchmark can miss). It polls the benchmark's PID; once that is gone it stops the
 * processes the scenarios started (bench-children.json), then every process named in the network's PID file, and
 * removes the folder unless told to keep it. Bounded in time.
 *
 * `node --import tsx scripts/bench/reaper.ts --dir D --parent PID --max-seconds S [--keep]`
 */
import { rmSync } from 'node:fs'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { layout } from '../../network/layout.js'
import { readPids, stopRecorded } from '../../network/description.js'
import { isAlive, sleep, stopPid, tsEntry } from '../../network/process.js'
import { readChildren } from './children.js'

/** Starts the reaper for `dir`, watching this process; returns its PID (to stop it once the benchmark has cleaned up). */
export function startReaper(dir: string, maxSeconds: number, keep: boolean): number | undefined {
  const args = ['--dir', dir, '--parent', String(process.pid), '--max-seconds', String(Math.ceil(maxSeconds)), ...(keep ? ['--keep'] : [])]
  const child = spawn(process.execPath, tsEntry(fileURLToPath(import.meta.url), args), { detached: true, stdio: 'ignore' })
  child.unref()
  return child.pid
}

async function main(argv: string[]): Promise<void> {
  const arg = (name: string): string | undefined => {
    const i = argv.indexOf(name)
    return i >= 0 ? argv[i + 1] : undefined
  }
  const dir = arg('--dir')
  const parent = Number(arg('--parent'))
  const maxSeconds = Number(arg('--max-seconds') ?? 3600)
  if (!dir || !Number.isInteger(parent) || parent <= 1) process.exit(2)
  const deadline = Date.now() + maxSeconds * 1000
  while (isAlive(parent) && Date.now() < deadline) await sleep(250)
  if (isAlive(parent)) return // the benchmark outlived its own limit: it still owns its network
  for (const pid of readChildren(dir)) await stopPid(pid)
  for (let pass = 0; pass < 3; pass++) {
    const alive = readPids(layout(dir).pidsJson).processes.filter((p) => isAlive(p.pid))
    if (alive.length === 0) break
    for (const p of alive.reverse()) await stopRecorded(p)
  }
  if (!argv.includes('--keep')) rmSync(dir, { recursive: true, force: true })
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main(process.argv.slice(2))
