/**
 * `npm run fuzz -- [--runs N] [--seed N] [--only family,...] [--timeout-ms MS] [--keep]`: the API fuzz of `npm test`
 * (test/support/fuzz, the same generators and verdict) for as long as asked, against a 1-member network it starts itself in
 * a temp folder and stops by PID at the end, on failure and on Ctrl-C too. Prints the counts per generator family,
 * the error codes each drew, the known faults met, and every kind of bad answer with a request that shows it.
 * Exits 1 when there was a bad answer.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startNetwork, stopUntilNoneLeft, type RunningNetwork } from '../network/network.js'
import { signalPid } from '../network/process.js'
import { startReaper } from './bench/reaper.js'
import { stopOnInterrupt } from './bench/interrupt.js'
import { codesReport, countsTable, failureReport, knownReport, plannedRequests, runCampaign } from '../test/support/fuzz/campaign.js'
import { FAMILIES } from '../test/support/fuzz/gen/families.js'
import { plantSeeds } from '../test/support/fuzz/gen/seeds.js'
import { REQUEST_TIMEOUT_MS } from '../test/support/fuzz/settings.js'

const USAGE = `npm run fuzz -- [--runs N] [--seed N] [--only family,...] [--timeout-ms MS] [--keep]
  --runs N         requests in all, shared among the families by weight (default 20000)
  --seed N         fast-check seed (default: random, printed)
  --only a,b       only these families: ${FAMILIES.map((f) => f.name).join(', ')}
  --timeout-ms MS  a request without an answer by then is a hang (default ${REQUEST_TIMEOUT_MS})
  --keep           keep the network's folder (logs) afterwards`

interface Options {
  runs: number
  seed: number
  only?: string[]
  timeoutMs: number
  keep: boolean
}

function parseArgs(argv: string[]): Options | 'help' {
  const o: Options = { runs: 20_000, seed: Math.floor(Math.random() * 2 ** 31), timeoutMs: REQUEST_TIMEOUT_MS, keep: false }
  const int = (name: string, v: string | undefined): number => {
    const n = Number(v)
    if (v === undefined || !Number.isSafeInteger(n) || n < 0) throw new Error(`${name} needs a whole number, got ${JSON.stringify(v)}`)
    return n
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--help' || a === '-h') return 'help'
    else if (a === '--runs') o.runs = int(a, argv[++i])
    else if (a === '--seed') o.seed = int(a, argv[++i])
    else if (a === '--timeout-ms') o.timeoutMs = int(a, argv[++i])
    else if (a === '--keep') o.keep = true
    else if (a === '--only') {
      o.only = (argv[++i] ?? '').split(',').filter(Boolean)
      const unknown = o.only.filter((n) => !FAMILIES.some((f) => f.name === n))
      if (o.only.length === 0 || unknown.length > 0) throw new Error(`--only takes families among ${FAMILIES.map((f) => f.name).join(', ')}; got ${JSON.stringify(argv[i])}`)
    } else throw new Error(`unknown argument ${JSON.stringify(a)}`)
  }
  return o
}

let options: Options
try {
  const parsed = parseArgs(process.argv.slice(2))
  if (parsed === 'help') {
    console.log(USAGE)
    process.exit(0)
  }
  options = parsed
} catch (err) {
  console.error(`${(err as Error).message}\n\n${USAGE}`)
  process.exit(2)
}

const dir = mkdtempSync(join(tmpdir(), 'parley-fuzz-'))
// Stops the network should this process die without doing so itself (tsx SIGKILLs its child on a second Ctrl-C).
const reaper = startReaper(dir, 24 * 3600, options.keep)
let net: RunningNetwork | undefined
let stopping: Promise<void> | undefined

/** Stops the network once: by its handle, then whatever its PID file still names (an interrupted start). */
function shutdown(): Promise<void> {
  stopping ??= (async () => {
    if (net) await net.stop()
    await stopUntilNoneLeft(dir)
    if (options.keep) console.error(`network folder kept: ${dir}`)
    else rmSync(dir, { recursive: true, force: true })
    if (reaper !== undefined) signalPid(reaper, 'SIGTERM')
  })()
  return stopping
}

stopOnInterrupt(() => stopping !== undefined, shutdown)

let exitCode = 0
try {
  console.log(`starting a 1-member network in ${dir}`)
  net = await startNetwork({ dir, members: 1 })
  const m = net.description.members[0]!
  const node = net.processes.find((p) => p.name === m.node)!
  const url = new URL(m.api)
  const seeds = await plantSeeds(m, `fuzz-${options.seed}`)
  console.log(`network ready in ${net.startupSeconds.toFixed(1)} s; fuzzing ${plannedRequests(options.runs, options.only)} requests with seed ${options.seed}`)
  const result = await runCampaign({
    target: { host: url.hostname, port: Number(url.port) },
    seeds,
    seed: options.seed,
    runs: options.runs,
    requestTimeoutMs: options.timeoutMs,
    pid: node.pid,
    logFile: node.logFile,
    ...(options.only ? { only: options.only } : {}),
    log: (l) => console.log(l),
  })
  console.log(`\n${countsTable(result)}\n\n4xx error codes by family:\n${codesReport(result)}\n\n${knownReport(result)}`)
  if (result.failures.length > 0) {
    exitCode = 1
    console.log(`\n${result.failures.length} bad answers (reproduce with --seed ${options.seed} --runs ${options.runs}${options.only ? ` --only ${options.only.join(',')}` : ''}):\n${failureReport(result.failures, 100)}`)
  } else console.log('\nno bad answers')
} catch (err) {
  exitCode = 1
  console.error(`fuzz failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`)
} finally {
  await shutdown()
}
process.exit(exitCode)
