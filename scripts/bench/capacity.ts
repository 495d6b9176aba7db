import { postgresCapacity } from './capacity-postgres.js'
import { readPids, type MemberDescription } from '../../network/description.js'
import { layout } from '../../network/layout.js'
import { processMemory } from '../../network/process.js'
import { explainMissing, waitAll, warmUp } from './broadcast.js'
import { fmtCpu, startCpu } from './cpu.js'
import { getJson, sleep } from './http.js'
import { acceptRate, reportFailures, sendConcurrent } from './send.js'
import { round, slope } from './stats.js'
import { throwIfAborted, type BenchContext, type Json, type Scenario } from './types.js'
import { ConfirmationWatcher } from './watch.js'

const NAMESPACE = 'default'
const ROUND_MESSAGES = 10_000
const MiB = 1024 * 1024
/**
 * /status names only the last checkpoint, and a member may checkpoint several times in one round: sampling it
 * between the rounds' own reads catches most of them (two in a row lasting the very same ms read as one).
 */
const STATUS_EVERY_MS = 1000
const STATUS_TIMEOUT_MS = 10_000
/**
 * A rotation not followed by a finished checkpoint within this long is taken for a failed one (the node keeps the
 * sealed journal and retries later), so that its RSS readings count again.
 */
const CHECKPOINT_MAX_MS = 180_000

/** The `database` section of a member's /status (node/db/capacity.ts), checked, as the bench relies on it. */
export interface DatabaseStatus {
  bytes: number
  limitBytes: number
  journalBytes: number
  lastCheckpointMs: number | null
  lastCheckpointExportMs: number | null
  warning: string | undefined
}

function parseDatabase(org: string, status: unknown): DatabaseStatus {
  const d = typeof status === 'object' && status !== null ? (status as { database?: unknown }).database : undefined
  if (typeof d !== 'object' || d === null) throw new Error(`${org}: /status has no database section`)
  const r = d as Record<string, unknown>
  const num = (k: string): number => {
    const v = r[k]
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`${org}: /status database.${k} is ${JSON.stringify(v)}, not a number`)
    return v
  }
  const numOrNull = (k: string): number | null => (r[k] === null || r[k] === undefined ? null : num(k))
  return {
    bytes: num('bytes'),
    limitBytes: num('limitBytes'),
    journalBytes: num('journalBytes'),
    lastCheckpointMs: numOrNull('lastCheckpointMs'),
    lastCheckpointExportMs: numOrNull('lastCheckpointExportMs'),
    warning: typeof r['warning'] === 'string' ? r['warning'] : undefined,
  }
}

export async function readDatabase(m: MemberDescription, timeoutMs: number): Promise<DatabaseStatus> {
  return parseDatabase(m.org, await getJson<unknown>(`${m.api}/api/v1/status`, timeoutMs))
}

interface CheckpointSeen {
  checkpointMs: number
  exportMs: number | null
  /** The database when the checkpoint was first seen finished: at most a sampling interval of growth past its own size. */
  databaseBytes: number
}

/** One member's readings: the last /status, and each checkpoint seen finishing during the run. */
export class MemberTrack {
  last: DatabaseStatus | undefined
  private lastAskedMs = -Infinity
  /** When the journal was last seen shrinking (a checkpoint's rotation) with no checkpoint finished since. */
  private rotatedMs: number | undefined
  readonly checkpoints: CheckpointSeen[] = []
  statusErrors = 0
  warned = false

  constructor(readonly member: MemberDescription) {}

  /** `askedMs`: when the reading was requested; the sampler's and a round's reads can answer out of order. */
  observe(d: DatabaseStatus, askedMs: number): void {
    if (askedMs < this.lastAskedMs) return
    this.lastAskedMs = askedMs
    const prev = this.last
    this.last = d
    // The first reading may name a checkpoint from before this run, whose database size is unknown.
    if (prev === undefined) return
    const changed = prev.lastCheckpointMs !== d.lastCheckpointMs || prev.lastCheckpointExportMs !== d.lastCheckpointExportMs
    if (d.lastCheckpointMs !== null && changed) {
      this.checkpoints.push({ checkpointMs: d.lastCheckpointMs, exportMs: d.lastCheckpointExportMs, databaseBytes: d.bytes })
      // Over, whether or not its rotation was seen (both can fall between two readings).
      this.rotatedMs = undefined
    } else if (d.journalBytes < prev.journalBytes) {
      this.rotatedMs = askedMs
    }
  }

  /**
   * Whether a checkpoint is building the snapshot now, as far as /status tells: its worker thread loads a second
   * copy of the database (snapshot plus sealed journal) and exports a third, which the node's RSS shows for the
   * while and then gives back in part.
   */
  checkpointRunning(nowMs: number): boolean {
    return this.rotatedMs !== undefined && nowMs - this.rotatedMs < CHECKPOINT_MAX_MS
  }
}

interface MemberSample {
  /** Messages of this run the member has confirmed, the x of the fits. */
  confirmed: number
  databaseBytes: number
  journalBytes: number
  limitBytes: number
  rssMiB: number | null
  peakRssMiB: number | null
  lastCheckpointMs: number | null
  lastCheckpointExportMs: number | null
  /** A checkpoint was building when the RSS was read: the reading is left out of the RSS fit. */
  checkpointRunning: boolean
}

interface RoundSample {
  /** Broadcasts of this run accepted so far. */
  messages: number
  /** From the round's first POST until every member had confirmed it. */
  seconds: number
  members: Map<string, MemberSample>
}

/** Node processes by name, read afresh so that a restarted node is followed by its new PID. */
export function nodePids(ctx: BenchContext): Map<string, number> {
  let listed: { name: string; pid: number }[]
  try {
    listed = readPids(layout(ctx.dir).pidsJson).processes
  } catch {
    listed = ctx.processes
  }
  return new Map(listed.map((p) => [p.name, p.pid]))
}

function memoryOf(pid: number | undefined): { rssMiB: number | null; peakRssMiB: number | null } {
  if (pid === undefined) return { rssMiB: null, peakRssMiB: null }
  try {
    const m = processMemory(pid)
    return { rssMiB: Number.isFinite(m.rss) ? m.rss / MiB : null, peakRssMiB: Number.isFinite(m.hwm) ? m.hwm / MiB : null }
  } catch {
    // The process is gone: the round's confirmations will have said so already.
    return { rssMiB: null, peakRssMiB: null }
  }
}

const fmtMiB = (bytes: number): string => (bytes / MiB).toFixed(1)
const fmtCount = (n: number): string => n.toLocaleString('en-US')

function fmtMember(org: string, s: MemberSample): string {
  const rss = s.rssMiB === null ? 'rss ?' : `rss ${s.rssMiB.toFixed(1)} MiB${s.checkpointRunning ? ' (checkpoint running)' : ''}`
  const cp = s.lastCheckpointMs === null ? '' : `, last checkpoint ${Math.round(s.lastCheckpointMs)} ms (export ${s.lastCheckpointExportMs === null ? '?' : Math.round(s.lastCheckpointExportMs)} ms)`
  return `${org} db ${fmtMiB(s.databaseBytes)} MiB, journal ${fmtMiB(s.journalBytes)} MiB, ${rss}${cp}`
}

/**
 * What a member costs as it fills: broadcasts from one member in rounds of 10,000, the same bodies and concurrency
 * as the broadcast throughput run; after each round, once every member has confirmed it, each member's database
 * size (/status) and its node's RSS. Fitted over the rounds: database bytes and RSS per confirmed message, and
 * how many messages a member holds before its database limit.
 */
export const capacityScenario: Scenario = {
  name: 'capacity',
  describe: 'a member as it fills: database size, journal, RSS and checkpoints per 10,000 broadcasts confirmed everywhere',
  optIn: true,
  postgresOnly: true,
  async run(ctx) {
    if (ctx.engine === 'postgres') return postgresCapacity(ctx)
    const { options: o, members, signal } = ctx
    const sender = members[0]!
    const url = `${sender.api}/api/v1/namespaces/${NAMESPACE}/messages/broadcast`
    const watchers = members.map((m) => new ConfirmationWatcher(m.org, m.api, NAMESPACE))
    for (const w of watchers) w.start(o.timeoutSeconds * 1000, signal)
    const tracks = members.map((m) => new MemberTrack(m))
    const stopSampler = new AbortController()
    const samplerSignal = AbortSignal.any([stopSampler.signal, signal])
    let sampler: Promise<void> | undefined
    const cpu = startCpu()
    const rounds: RoundSample[] = []
    const confirmedBefore = new Map<string, number>()

    const sampleAll = async (messages: number, seconds: number): Promise<RoundSample> => {
      const pids = nodePids(ctx)
      const out = new Map<string, MemberSample>()
      for (let i = 0; i < members.length; i++) {
        const m = members[i]!
        const track = tracks[i]!
        const asked = Date.now()
        const d = await readDatabase(m, 30_000)
        track.observe(d, asked)
        if (d.warning && !track.warned) {
          track.warned = true
          ctx.log(`  !! ${m.org}: ${d.warning}`)
        }
        out.set(m.org, {
          confirmed: watchers[i]!.count - (confirmedBefore.get(m.org) ?? 0),
          databaseBytes: d.bytes,
          journalBytes: d.journalBytes,
          limitBytes: d.limitBytes,
          ...memoryOf(pids.get(m.node)),
          lastCheckpointMs: d.lastCheckpointMs,
          lastCheckpointExportMs: d.lastCheckpointExportMs,
          checkpointRunning: track.checkpointRunning(Date.now()),
        })
      }
      return { messages, seconds, members: out }
    }

    let accepted = 0
    let baseline: RoundSample
    try {
      await warmUp(ctx, url, sender, watchers)
      for (const w of watchers) confirmedBefore.set(w.org, w.count)
      baseline = await sampleAll(0, 0)
      ctx.log(`before: ${[...baseline.members].map(([org, s]) => fmtMember(org, s)).join(' | ')}`)

      sampler = (async () => {
        while (!samplerSignal.aborted) {
          await Promise.all(
            members.map(async (m, i) => {
              const asked = Date.now()
              try {
                tracks[i]!.observe(await readDatabase(m, STATUS_TIMEOUT_MS), asked)
              } catch {
                // A node too busy to answer in time: the round's own read, which must succeed, follows.
                tracks[i]!.statusErrors++
              }
            }),
          )
          await sleep(STATUS_EVERY_MS, samplerSignal)
        }
      })()

      ctx.log(`capacity: ${fmtCount(o.capacityMessages)} broadcasts from ${sender.org}, ${o.concurrency} concurrent, in rounds of ${fmtCount(ROUND_MESSAGES)}`)
      for (let sent = 0, k = 1; sent < o.capacityMessages; k++) {
        const n = Math.min(ROUND_MESSAGES, o.capacityMessages - sent)
        const t0 = Date.now()
        const run = await sendConcurrent(url, 'capacity', n, o.concurrency, signal)
        throwIfAborted(signal)
        reportFailures(ctx, `round ${k}`, run)
        const ids = run.sent.map((s) => s.id)
        const missing = await waitAll(ctx, watchers, ids, 60_000 + n * 50)
        throwIfAborted(signal)
        const seconds = (Date.now() - t0) / 1000
        for (const w of watchers) await explainMissing(ctx, members.find((m) => m.org === w.org)!, missing.get(w.org) ?? [])
        sent += n
        accepted += run.sent.length
        const sample = await sampleAll(accepted, seconds)
        throwIfAborted(signal)
        rounds.push(sample)
        ctx.log(
          `  ${fmtCount(accepted)} messages (round ${k}: ${(run.sent.length / Math.max(1e-3, seconds)).toFixed(0)}/s confirmed everywhere, accepted at ${acceptRate(run).perSec.toFixed(0)}/s) | ${[...sample.members].map(([org, s]) => fmtMember(org, s)).join(' | ')}`,
        )
      }
    } finally {
      stopSampler.abort()
      await sampler
      await Promise.all(watchers.map((w) => w.stop()))
    }
    const benchCpu = cpu.stop()

    // The fits use the rounds only: the warm-up sample carries the node's start-up (heap growth, JIT) more than its data.
    const bytesPerMessage: { [org: string]: Json } = {}
    const rssPer100k: { [org: string]: Json } = {}
    const projected: { [org: string]: Json } = {}
    const checkpointsSeen: { [org: string]: Json } = {}
    const peakRss: { [org: string]: Json } = {}
    let firstFull: { org: string; messages: number } | undefined
    let largestExport: { org: string; cp: CheckpointSeen } | undefined
    let limitBytes = NaN
    if (rounds.length < 2) ctx.log(`  (${rounds.length} round${rounds.length === 1 ? '' : 's'}: the per-message figures need two at least)`)
    for (const t of tracks) {
      const org = t.member.org
      const points = rounds.map((r) => r.members.get(org)!)
      const bpm = slope(points.map((p) => ({ x: p.confirmed, y: p.databaseBytes })))
      const rssPoints = points.filter((p): p is MemberSample & { rssMiB: number } => p.rssMiB !== null && !p.checkpointRunning)
      const rss = slope(rssPoints.map((p) => ({ x: p.confirmed, y: p.rssMiB }))) * 100_000
      limitBytes = points.at(-1)?.limitBytes ?? t.last?.limitBytes ?? NaN
      const holds = bpm > 0 ? Math.round(limitBytes / bpm / 1000) * 1000 : NaN
      bytesPerMessage[org] = round(bpm, 0)
      rssPer100k[org] = round(rss, 1)
      projected[org] = Number.isFinite(holds) ? holds : null
      checkpointsSeen[org] = t.checkpoints.length
      // VmHWM only grows: the last reading is the peak since the node started.
      const peak = points.at(-1)?.peakRssMiB ?? null
      peakRss[org] = peak === null ? null : round(peak, 1)
      if (Number.isFinite(holds) && (firstFull === undefined || holds < firstFull.messages)) firstFull = { org, messages: holds }
      let largest: CheckpointSeen | undefined
      for (const cp of t.checkpoints) if (cp.exportMs !== null && (largest === undefined || cp.exportMs >= largest.exportMs!)) largest = cp
      if (largest && (largestExport === undefined || largest.exportMs! > largestExport.cp.exportMs!)) largestExport = { org, cp: largest }
      const longest = t.checkpoints.reduce<CheckpointSeen | undefined>((a, cp) => (a === undefined || cp.checkpointMs > a.checkpointMs ? cp : a), undefined)
      ctx.log(
        `  ${org}: ${Number.isFinite(bpm) ? bpm.toFixed(0) : '?'} database bytes per confirmed message; ` +
          `RSS ${Number.isFinite(rss) ? `${rss >= 0 ? '+' : ''}${rss.toFixed(1)}` : '?'} MiB per 100,000 (fitted over ${rssPoints.length} of ${points.length} rounds, those without a checkpoint running), peak ${peak === null ? '?' : peak.toFixed(1)} MiB; ` +
          `holds ~${Number.isFinite(holds) ? fmtCount(holds) : '?'} messages before its ${fmtMiB(limitBytes)} MiB limit; ` +
          `${t.checkpoints.length} checkpoints seen` +
          (largest ? `, largest export ${Math.round(largest.exportMs!)} ms (checkpoint ${Math.round(largest.checkpointMs)} ms) at ${fmtMiB(largest.databaseBytes)} MiB` : '') +
          (longest ? `, longest checkpoint ${Math.round(longest.checkpointMs)} ms at ${fmtMiB(longest.databaseBytes)} MiB` : '') +
          (t.statusErrors > 0 ? `; ${t.statusErrors} status reads failed` : ''),
      )
    }
    if (firstFull) ctx.log(`  first member to reach its database limit: ${firstFull.org}, after ~${fmtCount(firstFull.messages)} messages`)
    ctx.log(`  bench process CPU over the run: ${fmtCpu(benchCpu)}`)
    for (const w of watchers) if (w.errors > 0) ctx.log(`  !! ${w.org}: ${w.errors} event polls failed; last: ${w.lastError}`)

    return {
      messages: accepted,
      concurrency: o.concurrency,
      roundMessages: ROUND_MESSAGES,
      limitBytes: Number.isFinite(limitBytes) ? limitBytes : null,
      bytesPerMessage,
      rssMiBPer100kMessages: rssPer100k,
      projectedMessages: projected,
      projectedMessagesFirstFull: firstFull?.messages ?? null,
      largestCheckpointExport: largestExport
        ? {
            org: largestExport.org,
            exportMs: round(largestExport.cp.exportMs!, 1),
            checkpointMs: round(largestExport.cp.checkpointMs, 1),
            databaseMiB: round(largestExport.cp.databaseBytes / MiB, 1),
          }
        : null,
      checkpointsSeen,
      peakRssMiB: peakRss,
      benchCpuPct: round(benchCpu.pctOfCore),
      rounds: [baseline, ...rounds].map((r) => ({
        messages: r.messages,
        seconds: round(r.seconds, 2),
        databaseMiB: Object.fromEntries([...r.members].map(([org, s]) => [org, round(s.databaseBytes / MiB, 1)])),
        journalMiB: Object.fromEntries([...r.members].map(([org, s]) => [org, round(s.journalBytes / MiB, 1)])),
        rssMiB: Object.fromEntries([...r.members].map(([org, s]) => [org, s.rssMiB === null ? null : round(s.rssMiB, 1)])),
        checkpointRunning: [...r.members].filter(([, s]) => s.checkpointRunning).map(([org]) => org),
      })),
    }
  },
}
