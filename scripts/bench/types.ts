import type { DatabaseEngine } from '../../network/startup/database.js'
import type { MemberDescription } from '../../network/description.js'
import type { Children } from './children.js'

/** A JSON value, for the sections scenarios return. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json }

export interface BenchOptions {
  /** Messages in the throughput run. */
  messages: number
  /** Concurrent POSTs in the throughput run. */
  concurrency: number
  /** Messages in the paced latency run. */
  latencyMessages: number
  /** Messages per second in the paced latency run. */
  rate: number
  /** Members of the network. */
  members: number
  /** Whole-run limit, seconds; the network is stopped when it is reached. */
  timeoutSeconds: number
  /** Size of the blob in the blob run, MiB. */
  blobMiB: number
  /** Broadcasts the capacity run sends, in rounds of 10,000. */
  capacityMessages: number
  /** How long the soak run lasts, minutes. */
  soakMinutes: number
  /** Requests per second in the soak run (over every member). */
  soakRate: number
  /** Events in the log the events run delivers (topped up with broadcasts to this many). */
  eventBacklog: number
  /** Broadcasts the events-slow run sends with stalled clients, and as many over its two controls without them. */
  slowMessages: number
  /** Cold loads of each console view the console run times (a new browser and profile for each). */
  consoleRuns: number
  /** How long each attack of the starvation run lasts, seconds. */
  attackSeconds: number
  /** Run only these scenarios (when empty, all but the opt-in ones). */
  only: string[]
  /** Keep the temp folder (logs, data) after the run. */
  keep: boolean
  /** postgres: the scenarios run on sql.js and then on PostgreSQL, side by side (see Scenario.postgresOnly). */
  database: DatabaseEngine
  /** The paced latency run goes at half the rate the throughput run confirmed on every member, not at `rate`. */
  pacedAtHalf: boolean
}

export interface BenchContext {
  /** The network's folder; a scenario's own processes log under its `logs`. */
  dir: string
  members: MemberDescription[]
  /** The network's processes (chain, ipfs, one per member node), for memory sampling. */
  processes: { name: string; pid: number }[]
  options: BenchOptions
  /** The engine this network's members are on. */
  engine: DatabaseEngine
  /** Processes a scenario starts itself: stopped by the shutdown and by the reaper too. */
  children: Children
  /** Aborted on SIGINT, SIGTERM or the whole-run limit: scenarios stop their loops. */
  signal: AbortSignal
  /** A human-readable line. */
  log: (line: string) => void
}

/**
 * One benchmarked path (broadcast, later private messages, blobs, ...). It runs against the shared network,
 * prints what it measures through `ctx.log`, and returns its section of the final JSON line under `name`.
 */
export interface Scenario {
  name: string
  describe: string
  /**
   * Runs only when named in --only: for scenarios long enough (minutes) that they would stretch every default run
   * out of proportion.
   */
  optIn?: boolean
  /** With `--database postgres`, runs on PostgreSQL alone: its figures compare with themselves, not with sql.js's. */
  postgresOnly?: boolean
  run(ctx: BenchContext): Promise<{ [key: string]: Json }>
}

/** Thrown by a scenario once the run is interrupted, so that it prints no figures from a cut-short phase. */
export class Interrupted extends Error {
  constructor() {
    super('interrupted')
  }
}

export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new Interrupted()
}
