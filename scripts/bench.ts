/**
 * `npm run bench -- [--messages N] [--concurrency C] [--rate R] ...`: starts its own network (free ports, a temp
 * folder), runs each scenario against it, prints what it measured, then one JSON line with a section per scenario
 * and the network's time to ready. The network is stopped whatever happens, Ctrl-C included.
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
const dir = mkdtempSync(join(tmpdir(), 'parley-bench-'))
const abort = new AbortController()
// Stops the network should this process die without doing so itself (e.g. SIGKILLed by tsx on Ctrl-C).
const reaper = startReaper(dir, options.timeoutSeconds + 120, options.keep)
const children = new Children(dir)
let net: RunningNetwork | undefined
let stopping: Promise<void> | undefined

/**
 * Stops the scenarios' own processes and the network once, the network by the handle when there is one, else by
 * the PIDs it recorded (interrupted start).
 */
function shutdown(): Promise<void> {
  stopping ??= (async () => {
    abort.abort()
    await children.stopAll()
    if (net) await net.stop()
    await stopUntilNoneLeft(dir)
    if (options.keep) console.error(`network folder kept: ${dir}`)
    else rmSync(dir, { recursive: true, force: true })
    if (reaper !== undefined) signalPid(reaper, 'SIGTERM')
  })()
  return stopping
}

stopOnInterrupt(() => stopping !== undefined, shutdown)
const watchdog = setTimeout(() => {
  console.error(`the benchmark exceeded --timeout ${options.timeoutSeconds} s: stopping the network`)
  void shutdown().finally(() => process.exit(1))
}, options.timeoutSeconds * 1000)
watchdog.unref()

let exitCode = 0
try {
  log(`starting a ${options.members}-member network in ${dir}`)
  net = await startNetwork({ dir, members: options.members, log: (l) => log(`  ${l}`) })
  log(`network ready in ${net.startupSeconds.toFixed(1)} s`)
  const ctx: BenchContext = { dir, members: net.description.members, processes: net.processes, options, children, signal: abort.signal, log }
  const sections: { [name: string]: Json } = {}
  for (const s of SCENARIOS) {
    if (abort.signal.aborted) break
    if (options.only.length > 0 ? !options.only.includes(s.name) : s.optIn === true) continue
    log(`\n== ${s.name}: ${s.describe}`)
    const t = Date.now()
    sections[s.name] = await s.run(ctx)
    log(`== ${s.name} done in ${((Date.now() - t) / 1000).toFixed(1)} s`)
  }
  if (!abort.signal.aborted) {
    log(`\nbenchmark finished in ${((Date.now() - started) / 1000).toFixed(1)} s (network start included)`)
    console.log(JSON.stringify({ ...sections, network: { readySeconds: round(net.startupSeconds, 2) } }))
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
