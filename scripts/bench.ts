/**
 * `npm run bench -- [--messages N] [--concurrency C] [--rate R] ...`: starts its own network (free ports, a temp
 * folder), runs each scenario against it, prints what it measured, then one JSON line with a section per scenario
 * and the network's time to ready. The network is stopped whatever happens, Ctrl-C included. With `--database postgres`
 * the scenarios run on a network on sql.js, then on one on PostgreSQL, and their figures are printed side by side.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startNetwork, stopUntilNoneLeft, type RunningNetwork } from '../network/network.js'
import { signalPid } from '../network/process.js'
import { parseArgs, UsageError, USAGE } from './bench/args.js'
import { broadcastScenario } from './bench/broadcast.js'
import { blobScenario } from './bench/blob.js'
import { capacityScenario } from './bench/capacity.js'
import { eventsScenario } from './bench/events.js'
import { consoleScenario } from './bench/console.js'
import { dbScenario } from './bench/db.js'
import { eventsSlowScenario } from './bench/events-slow.js'
import { soakScenario } from './bench/soak.js'
import { starvationScenario } from './bench/starvation.js'
import { privateScenario } from './bench/private.js'
import { receiveScenario } from './bench/receive.js'
import { Children } from './bench/children.js'
import { sizeClient } from './bench/http.js'
import { PACED_MAX_IN_FLIGHT } from './bench/send.js'
import { startReaper } from './bench/reaper.js'
import { stopOnInterrupt } from './bench/interrupt.js'
import { round } from './bench/stats.js'
import type { BenchContext, Json, Scenario } from './bench/types.js'
import { printSideBySide } from './bench/engines.js'
import { engineLabel } from '../node/commands/move-member.js'
import type { DatabaseEngine } from '../network/startup/database.js'

/** Every path the benchmark measures, in order; later capabilities add theirs here. Opt-in ones run only when named. */
const SCENARIOS: Scenario[] = [broadcastScenario, receiveScenario, privateScenario, blobScenario, eventsScenario, consoleScenario, dbScenario, capacityScenario, soakScenario, eventsSlowScenario, starvationScenario]

let parsed: ReturnType<typeof parseArgs>
try {
  parsed = parseArgs(process.argv.slice(2))
} catch (err) {
  if (!(err instanceof UsageError)) throw err
  console.error(`${err.message}\n\n${USAGE}`)
  process.exit(2)
}
if (parsed === 'help') {
  console.log(USAGE)
  process.exit(0)
}
const options = parsed
// A soak lasts as long as it is told to: the whole-run limit grows to fit it, with room for the start and the drain.
if (options.only.includes('soak')) options.timeoutSeconds = Math.max(options.timeoutSeconds, options.soakMinutes * 60 + 300)
// So do the events runs, by the broadcasts they send (the network confirms ~1,000 a second or more).
if (options.only.includes('events-slow')) options.timeoutSeconds = Math.max(options.timeoutSeconds, (2 * options.slowMessages + 20_000) / 500 + 300)
if (options.only.length === 0 || options.only.includes('events')) options.timeoutSeconds = Math.max(options.timeoutSeconds, options.eventBacklog / 100 + 300)
// A history of millions loaded and queried at each tenth.
if (options.only.includes('capacity') && options.database === 'postgres') options.timeoutSeconds = Math.max(options.timeoutSeconds, 3600)
const unknown = options.only.filter((n) => !SCENARIOS.some((s) => s.name === n))
if (unknown.length > 0) {
  console.error(`unknown scenario ${unknown.join(', ')}; there are ${SCENARIOS.map((s) => s.name).join(', ')}`)
  process.exit(2)
}

// Every POST the runs can have in flight to one member gets its own socket, plus one for that member's event poller
// and one for its /status sampler (capacity).
sizeClient(Math.max(options.concurrency, PACED_MAX_IN_FLIGHT) + 2)

const log = (line: string): void => console.log(line)
const started = Date.now()
const abort = new AbortController()

/** One network the benchmark runs its scenarios on: its folder, its reaper, the processes its scenarios started. */
interface NetworkRun {
  engine: DatabaseEngine
  dir: string
  reaper: number | undefined
  children: Children
  net?: RunningNetwork
}
let current: NetworkRun | undefined
let stopping: Promise<void> | undefined

/** Stops the scenarios' own processes and the network of `run`, by the handle when there is one, else by its PIDs. */
async function stopRun(run: NetworkRun): Promise<void> {
  await run.children.stopAll()
  if (run.net) await run.net.stop()
  await stopUntilNoneLeft(run.dir)
  if (options.keep) console.error(`network folder kept: ${run.dir}`)
  else rmSync(run.dir, { recursive: true, force: true })
  if (run.reaper !== undefined) signalPid(run.reaper, 'SIGTERM')
}

/** Once, for an interruption or the whole-run limit: stops whichever network runs. */
function shutdown(): Promise<void> {
  stopping ??= (async () => {
    abort.abort()
    if (current) await stopRun(current)
  })()
  return stopping
}

stopOnInterrupt(() => stopping !== undefined, shutdown)
const watchdog = setTimeout(() => {
  console.error(`the benchmark exceeded --timeout ${options.timeoutSeconds} s: stopping the network`)
  void shutdown().finally(() => process.exit(1))
}, options.timeoutSeconds * 1000)
watchdog.unref()

/** Starts a network on `engine`, runs the chosen scenarios on it, stops it; answers their sections. */
async function runOn(engine: DatabaseEngine): Promise<{ [name: string]: Json }> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-bench-'))
  // Stops the network should this process die without doing so itself (e.g. SIGKILLed by tsx on Ctrl-C).
  const run: NetworkRun = { engine, dir, reaper: startReaper(dir, options.timeoutSeconds + 120, options.keep), children: new Children(dir) }
  current = run
  try {
    log(`starting a ${options.members}-member network on ${engineLabel(engine)} in ${dir}`)
    const net = await startNetwork({ dir, members: options.members, database: engine, log: (l) => log(`  ${l}`) })
    run.net = net
    log(`network ready in ${net.startupSeconds.toFixed(1)} s`)
    const ctx: BenchContext = { dir, members: net.description.members, processes: net.processes, options, engine, children: run.children, signal: abort.signal, log }
    const sections: { [name: string]: Json } = {}
    for (const s of SCENARIOS) {
      if (abort.signal.aborted) break
      if (!runsOn(s, engine)) continue
      log(`\n== ${s.name}${engines.length > 1 ? ` on ${engineLabel(engine)}` : ''}: ${s.describe}`)
      const t = Date.now()
      sections[s.name] = await s.run(ctx)
      log(`== ${s.name} done in ${((Date.now() - t) / 1000).toFixed(1)} s`)
    }
    sections['network'] = { readySeconds: round(net.startupSeconds, 2) }
    return sections
  } finally {
    if (!abort.signal.aborted) {
      current = undefined
      await stopRun(run)
    }
  }
}

/** Whether scenario `s` runs on `engine` in this run: those chosen, and on PostgreSQL only those that compare. */
function runsOn(s: Scenario, engine: DatabaseEngine): boolean {
  const chosen = options.only.length > 0 ? options.only.includes(s.name) : s.optIn !== true
  return chosen && (engine === 'postgres' || !(options.database === 'postgres' && s.postgresOnly === true))
}

const engines: DatabaseEngine[] = options.database === 'postgres' ? (options.only.length > 0 && SCENARIOS.every((s) => !options.only.includes(s.name) || s.postgresOnly === true) ? ['postgres'] : ['sqljs', 'postgres']) : ['sqljs']

let exitCode = 0
try {
  const results: { engine: DatabaseEngine; sections: { [name: string]: Json } }[] = []
  for (const engine of engines) {
    if (abort.signal.aborted) break
    results.push({ engine, sections: await runOn(engine) })
  }
  if (!abort.signal.aborted) {
    if (results.length > 1) printSideBySide(log, results)
    log(`\nbenchmark finished in ${((Date.now() - started) / 1000).toFixed(1)} s (network start included)`)
    console.log(JSON.stringify(results.length === 1 ? results[0]!.sections : Object.fromEntries(results.map((r) => [r.engine, r.sections]))))
  }
} catch (err) {
  exitCode = 1
  // Once interrupted, the signal handler (or the watchdog) stops the network and sets the exit code.
  if (!abort.signal.aborted) {
    console.error(`benchmark failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`)
    if (!options.keep) console.error(`(run again with --keep to keep the network's logs)`)
  }
} finally {
  await shutdown()
  clearTimeout(watchdog)
}
process.exit(exitCode)
