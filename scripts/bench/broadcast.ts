import type { MemberDescription } from '../../network/description.js'
import { runBareBaseline, type BareResult } from './bare.js'
import { fmtCpu, restOf, startCpu, startEachProcessCpu, startMachineCpu, startProcessCpu, type CpuFigure, type ProcessCpu } from './cpu.js'
import { getJson } from './http.js'
import { acceptRate, reportFailures, sendConcurrent, sendPaced, type SendRun } from './send.js'
import { maxOf, minOf, round, summarize, type Summary } from './stats.js'
import { Interrupted, throwIfAborted, type BenchContext, type Json, type Scenario } from './types.js'
import { ConfirmationWatcher } from './watch.js'

const NAMESPACE = 'default'
const WARMUP_MESSAGES = 20

/** Names what a member says about messages it has not confirmed (state, or not there at all), a few of them. */
export async function explainMissing(ctx: BenchContext, m: MemberDescription, missing: string[]): Promise<void> {
  if (missing.length === 0) return
  const states = new Map<string, number>()
  for (const id of missing.slice(0, 20)) {
    let state: string
    try {
      state = (await getJson<{ state: string }>(`${m.api}/api/v1/namespaces/${NAMESPACE}/messages/${id}`, 5000)).state
    } catch (err) {
      state = /answered 404/.test(String(err)) ? 'unknown here' : 'error'
    }
    states.set(state, (states.get(state) ?? 0) + 1)
  }
  ctx.log(`  !! ${m.org}: ${missing.length} messages not confirmed in time; of the first ${Math.min(20, missing.length)}: ${[...states].map(([s, n]) => `${n} ${s}`).join(', ')}`)
}

/** Connections, JIT, the first batch and pin: sent and confirmed everywhere before anything is measured. */
export async function warmUp(ctx: BenchContext, url: string, sender: MemberDescription, watchers: ConfirmationWatcher[]): Promise<void> {
  ctx.log(`warm-up: ${WARMUP_MESSAGES} broadcasts from ${sender.org}`)
  const warm = await sendConcurrent(url, 'warmup', WARMUP_MESSAGES, 10, ctx.signal)
  reportFailures(ctx, 'warm-up', warm)
  await waitAll(ctx, watchers, warm.sent.map((s) => s.id), 60_000)
  throwIfAborted(ctx.signal)
}

/** Waits until every member has confirmed `ids`, printing progress every few seconds; returns the missing ids per member. */
export async function waitAll(ctx: BenchContext, watchers: ConfirmationWatcher[], ids: string[], timeoutMs: number): Promise<Map<string, string[]>> {
  let lastPrint = Date.now()
  const progress = (): void => {
    if (Date.now() - lastPrint < 5000) return
    lastPrint = Date.now()
    ctx.log(`  ... confirmed ${watchers.map((w) => `${w.org} ${w.countOf(ids)}/${ids.length}`).join(', ')}`)
  }
  const missing = await Promise.all(watchers.map((w) => w.waitFor(ids, timeoutMs, ctx.signal, progress)))
  return new Map(watchers.map((w, i) => [w.org, missing[i]!]))
}

/** The 202 rate in each quarter of the run (by arrival order), to show a node slowing down as it fills. */
function quarterRates(run: SendRun): number[] {
  const times = run.sent.map((s) => s.acceptedMs).sort((a, b) => a - b)
  const out: number[] = []
  let from = run.firstSendMs
  for (let q = 1; q <= 4; q++) {
    const lo = Math.floor(((q - 1) * times.length) / 4)
    const hi = Math.floor((q * times.length) / 4)
    const to = times[hi - 1]
    if (to === undefined || hi <= lo) continue
    out.push((hi - lo) / Math.max(1e-3, (to - from) / 1000))
    from = to
  }
  return out
}

/**
 * Milliseconds of CPU per message for each process (the benchmark's own included) and in all, and the part of each
 * spent off its main thread. A process that could not be read is null, and so is the total.
 */
type PerProcess = { [process: string]: number | null }
type CpuPerMessage = { all: PerProcess; helpers: PerProcess }

function cpuPerMessage(perProcess: readonly ProcessCpu[], messages: number): CpuPerMessage {
  const per = (seconds: number): number | null => round((1000 * seconds) / Math.max(1, messages), 3)
  const all: PerProcess = {}
  const helpers: PerProcess = {}
  for (const p of perProcess) {
    all[p.name] = per(p.cpuSeconds)
    helpers[p.name] = per(p.cpuSeconds - p.mainSeconds)
  }
  all['total'] = per(perProcess.reduce((n, p) => n + p.cpuSeconds, 0))
  helpers['total'] = per(perProcess.reduce((n, p) => n + p.cpuSeconds - p.mainSeconds, 0))
  return { all, helpers }
}

function logCpuPerMessage(ctx: BenchContext, figures: CpuPerMessage): void {
  const fmt = (m: PerProcess): string => Object.entries(m).map(([n, v]) => `${n} ${v?.toFixed(3)}`).join(', ')
  ctx.log(`  CPU per message, first POST to last confirmation (ms): ${fmt(figures.all)}`)
  ctx.log(`    of it, off each process's main thread (V8's compiler and garbage collector, workers): ${fmt(figures.helpers)}`)
}

/** Prints a run's rates by quarter; answers them rounded, for the figures. */
function logQuarterRates(ctx: BenchContext, run: SendRun): (number | null)[] {
  const rates = quarterRates(run)
  ctx.log(`  accepted per second by quarter of the run: ${rates.map((r) => r.toFixed(1)).join(', ')}`)
  return rates.map((r) => round(r))
}

export function fmtSummary(s: Summary): string {
  return `p50 ${round(s.p50)} ms, p95 ${round(s.p95)} ms, p99 ${round(s.p99)} ms (min ${round(s.min)}, max ${round(s.max)}, n=${s.count})`
}

/**
 * 202-to-confirmed of a paced run on each member, printed per member (the sender's apart: it is not in the figure)
 * and summarized over the other members, which is what the figure is.
 */
export async function recipientLatency(ctx: BenchContext, watchers: ConfirmationWatcher[], paced: SendRun, sender: MemberDescription, missing: Map<string, string[]>): Promise<Summary> {
  const all: number[] = []
  for (const w of watchers) {
    const lat = paced.sent.map((s) => (w.get(s.id)?.confirmedMs ?? NaN) - s.acceptedMs).filter((x) => Number.isFinite(x))
    const isSender = w.org === sender.org
    if (!isSender) for (const x of lat) all.push(x)
    ctx.log(`  ${w.org}${isSender ? ' (sender, not in the figure)' : ''}: ${fmtSummary(summarize(lat))}`)
    await explainMissing(ctx, ctx.members.find((m) => m.org === w.org)!, missing.get(w.org) ?? [])
  }
  const overall = summarize(all)
  const others = ctx.members.filter((m) => m.org !== sender.org).map((m) => m.org)
  ctx.log(others.length > 0 ? `  202-to-confirmed on ${others.join(', ')}: ${fmtSummary(overall)}` : '  202-to-confirmed on other members: none in a one-member network')
  return overall
}

export const broadcastScenario: Scenario = {
  name: 'broadcast',
  describe: 'broadcast messages: accepted at one member, pinned, confirmed by every member',
  async run(ctx) {
    const { options: o, members, signal } = ctx
    const sender = members[0]!
    const url = `${sender.api}/api/v1/namespaces/${NAMESPACE}/messages/broadcast`
    const watchers = members.map((m) => new ConfirmationWatcher(m.org, m.api, NAMESPACE))
    for (const w of watchers) w.start(o.timeoutSeconds * 1000, signal)
    // Filled phase by phase inside the try, read after it: the bare baseline runs once the watchers have stopped.
    const cpu: { accept?: CpuFigure; confirm?: CpuFigure; latency?: CpuFigure; bare?: CpuFigure } = {}
    const acceptOthers = { network: NaN, rest: NaN }
    const confirmedPerSec: { [org: string]: Json } = {}
    let acceptedPerSec = NaN
    let warmAcceptedPerSec = NaN
    let byQuarter: (number | null)[] = []
    let warmByQuarter: (number | null)[] = []
    let coldCpu: CpuPerMessage = { all: {}, helpers: {} }
    let warmCpu: CpuPerMessage = { all: {}, helpers: {} }
    let messages = 0
    let overall: Summary = summarize([])
    try {
      await warmUp(ctx, url, sender, watchers)

      // 1. Throughput: many concurrent POSTs at one member; every member confirms them all.
      ctx.log(`throughput: ${o.messages} broadcasts from ${sender.org}, ${o.concurrency} concurrent`)
      const machineCpu = startMachineCpu()
      const acceptCpu = startCpu()
      const networkCpu = startProcessCpu(ctx.processes.map((p) => p.pid))
      const eachCpu = startEachProcessCpu([...ctx.processes, { name: 'bench', pid: process.pid }])
      const burst = await sendConcurrent(url, 'throughput', o.messages, o.concurrency, signal)
      cpu.accept = acceptCpu.stop()
      acceptOthers.network = networkCpu.stop()
      acceptOthers.rest = restOf(machineCpu.stop(), cpu.accept.pctOfCore, acceptOthers.network)
      throwIfAborted(signal)
      reportFailures(ctx, 'throughput', burst)
      const burstIds = burst.sent.map((s) => s.id)
      const first202 = minOf(burst.sent.map((s) => s.acceptedMs))
      const last202 = maxOf(burst.sent.map((s) => s.acceptedMs))
      acceptedPerSec = acceptRate(burst).perSec
      ctx.log(`  accepted ${burst.sent.length} in ${((last202 - burst.firstSendMs) / 1000).toFixed(2)} s: ${acceptedPerSec.toFixed(1)} messages/s at ${sender.org}`)
      byQuarter = logQuarterRates(ctx, burst)
      ctx.log(`  bench process CPU while sending: ${fmtCpu(cpu.accept)}`)
      ctx.log(`  meanwhile the network's processes used ${acceptOthers.network.toFixed(1)} % of one core, the rest of the machine ${acceptOthers.rest.toFixed(1)} %`)
      const confirmCpu = startCpu()
      const burstMissing = await waitAll(ctx, watchers, burstIds, 60_000 + o.messages * 50)
      cpu.confirm = confirmCpu.stop()
      const perProcess = eachCpu.stop()
      throwIfAborted(signal)
      // From the first POST until every member confirmed the last message: all the work the burst caused, anywhere.
      coldCpu = cpuPerMessage(perProcess, burst.sent.length)
      logCpuPerMessage(ctx, coldCpu)
      for (const w of watchers) {
        const times = burstIds.map((id) => w.get(id)?.confirmedMs).filter((t): t is number => t !== undefined)
        const lastConfirmed = maxOf(times)
        const rate = times.length / Math.max(1e-3, (lastConfirmed - first202) / 1000)
        confirmedPerSec[w.org] = round(rate)
        const behind = lastConfirmed - last202
        ctx.log(
          `  ${w.org} confirmed ${times.length}/${burstIds.length} in ${((lastConfirmed - first202) / 1000).toFixed(2)} s from the first 202: ${rate.toFixed(1)} messages/s (last confirmation ${(behind / 1000).toFixed(2)} s after the last 202)`,
        )
        await explainMissing(ctx, members.find((m) => m.org === w.org)!, burstMissing.get(w.org) ?? [])
      }
      ctx.log(`  bench process CPU from the last 202 until every member confirmed: ${fmtCpu(cpu.confirm)}`)
      messages = burst.sent.length

      // 1b. The same burst again: the figures above include the nodes' warm-up (V8 optimises the hot path over the
      // first thousands of requests; the rate climbs through the run), which a long-running network has behind it.
      // Reported beside the first run's, which stays the headline so that runs remain comparable.
      ctx.log(`throughput, warm: ${o.messages} more broadcasts from ${sender.org}, ${o.concurrency} concurrent`)
      const warmEachCpu = startEachProcessCpu([...ctx.processes, { name: 'bench', pid: process.pid }])
      const warmBurst = await sendConcurrent(url, 'throughput-warm', o.messages, o.concurrency, signal)
      throwIfAborted(signal)
      reportFailures(ctx, 'throughput, warm', warmBurst)
      warmAcceptedPerSec = acceptRate(warmBurst).perSec
      ctx.log(`  accepted ${warmBurst.sent.length}: ${warmAcceptedPerSec.toFixed(1)} messages/s at ${sender.org}`)
      warmByQuarter = logQuarterRates(ctx, warmBurst)
      const warmMissing = await waitAll(ctx, watchers, warmBurst.sent.map((s) => s.id), 60_000 + o.messages * 50)
      const warmPerProcess = warmEachCpu.stop()
      throwIfAborted(signal)
      warmCpu = cpuPerMessage(warmPerProcess, warmBurst.sent.length)
      logCpuPerMessage(ctx, warmCpu)
      for (const w of watchers) await explainMissing(ctx, members.find((m) => m.org === w.org)!, warmMissing.get(w.org) ?? [])

      // 2. Latency: a paced run, so that batch timeouts show; 202 at the sender to `confirmed` on every other member.
      const rate = o.pacedAtHalf ? Math.max(1, Math.round(Math.min(...Object.values(confirmedPerSec).map((r) => (typeof r === 'number' ? r : 0))) / 2)) : o.rate
      ctx.log(`latency: ${o.latencyMessages} broadcasts from ${sender.org} at ${rate}/s${o.pacedAtHalf ? ' (half the throughput confirmed everywhere)' : ''}`)
      const latencyCpu = startCpu()
      const paced = await sendPaced(url, 'latency', o.latencyMessages, rate, signal)
      throwIfAborted(signal)
      reportFailures(ctx, 'latency', paced)
      const pacedSeconds = (maxOf(paced.sent.map((s) => s.acceptedMs)) - paced.firstSendMs) / 1000
      ctx.log(`  accepted ${paced.sent.length} in ${pacedSeconds.toFixed(2)} s (${(paced.sent.length / Math.max(1e-3, pacedSeconds)).toFixed(1)}/s achieved)`)
      const pacedIds = paced.sent.map((s) => s.id)
      const pacedMissing = await waitAll(ctx, watchers, pacedIds, 60_000 + o.latencyMessages * 50)
      cpu.latency = latencyCpu.stop()
      throwIfAborted(signal)
      overall = await recipientLatency(ctx, watchers, paced, sender, pacedMissing)
      ctx.log(`  bench process CPU from the first paced POST until every member confirmed: ${fmtCpu(cpu.latency)}`)
      for (const w of watchers) if (w.errors > 0) ctx.log(`  !! ${w.org}: ${w.errors} event polls failed; last: ${w.lastError}`)
    } finally {
      await Promise.all(watchers.map((w) => w.stop()))
    }

    // 3. Bare baseline, after the watchers have stopped so that only the sending client runs beside it.
    ctx.log(`bare baseline: the throughput run's ${o.messages} POSTs, ${o.concurrency} concurrent, same client, to a Koa server in its own process`)
    let bare: BareResult | undefined
    try {
      bare = await runBareBaseline(ctx, o.messages, o.concurrency)
    } catch (err) {
      if (err instanceof Interrupted || signal.aborted) throw err
      // The broadcast figures stand without it; say why the ratio is missing rather than lose them.
      ctx.log(`  !! the bare baseline failed: ${err instanceof Error ? err.message : String(err)}`)
    }
    const acceptVsBare = bare ? acceptedPerSec / bare.acceptedPerSec : NaN
    if (bare) {
      cpu.bare = bare.cpu
      ctx.log(`  bare Koa + sha256 + sql.js insert: ${bare.acceptedPerSec.toFixed(1)}/s (${bare.accepted} in ${bare.seconds.toFixed(2)} s)`)
      ctx.log(`  bench process CPU while sending: ${fmtCpu(bare.cpu)}`)
      ctx.log(`  meanwhile the bare server used ${bare.serverCpuPct.toFixed(1)} % of one core, the network's processes ${bare.networkCpuPct.toFixed(1)} %, the rest of the machine ${bare.restCpuPct.toFixed(1)} %`)
      ctx.log(`  accept rate / bare rate: ${acceptVsBare.toFixed(3)} (${acceptedPerSec.toFixed(1)}/s at ${sender.org}, ${bare.acceptedPerSec.toFixed(1)}/s bare)`)
      ctx.log(`  warm: bare ${bare.warmAcceptedPerSec.toFixed(1)}/s; accept rate / bare rate ${(warmAcceptedPerSec / bare.warmAcceptedPerSec).toFixed(3)} (${warmAcceptedPerSec.toFixed(1)}/s at ${sender.org})`)
    }

    return {
      acceptedPerSec: round(acceptedPerSec),
      acceptedPerSecByQuarter: byQuarter,
      confirmedPerSec,
      latencyMs: { p50: round(overall.p50), p95: round(overall.p95), p99: round(overall.p99) },
      messages,
      concurrency: o.concurrency,
      bareAcceptedPerSec: bare ? round(bare.acceptedPerSec) : null,
      acceptVsBare: round(acceptVsBare, 3),
      warm: {
        acceptedPerSec: round(warmAcceptedPerSec),
        acceptedPerSecByQuarter: warmByQuarter,
        bareAcceptedPerSec: bare ? round(bare.warmAcceptedPerSec) : null,
        acceptVsBare: bare ? round(warmAcceptedPerSec / bare.warmAcceptedPerSec, 3) : null,
        cpuMsPerMessage: warmCpu.all,
        helperCpuMsPerMessage: warmCpu.helpers,
      },
      benchCpuPct: Object.fromEntries(Object.entries(cpu).map(([phase, c]) => [phase, round(c.pctOfCore)])),
      cpuMsPerMessage: coldCpu.all,
      helperCpuMsPerMessage: coldCpu.helpers,
      acceptCpuPct: { network: round(acceptOthers.network), rest: round(acceptOthers.rest) },
      bareCpuPct: bare ? { server: round(bare.serverCpuPct), network: round(bare.networkCpuPct), rest: round(bare.restCpuPct) } : null,
    }
  },
}
