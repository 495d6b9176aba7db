import type { MemberDescription } from '../../network/description.js'
import { getJson, postJson, sleep } from './http.js'
import { maxOf, minOf, round, summarize, type Summary } from './stats.js'
import { throwIfAborted, type BenchContext, type Json, type Scenario } from './types.js'
import { ConfirmationWatcher } from './watch.js'

const NAMESPACE = 'default'
const WARMUP_MESSAGES = 20
/** Most POSTs in flight during the paced run, so a stalled node cannot pile up unbounded requests. */
const PACED_MAX_IN_FLIGHT = 500

interface Sent {
  id: string
  /** When the 202 arrived at this client, ms since the epoch. */
  acceptedMs: number
}

interface SendRun {
  sent: Sent[]
  firstSendMs: number
  failures: number
  failureSamples: string[]
}

function body(phase: string, i: number): Json {
  return { header: { tag: `bench-${phase}` }, data: [{ value: { phase, i, note: 'parley bench', at: Date.now() } }] }
}

async function sendOne(url: string, phase: string, i: number, run: SendRun): Promise<void> {
  try {
    const res = await postJson(url, body(phase, i))
    if (res.status === 202) {
      const m = JSON.parse(res.text) as { header: { id: string } }
      run.sent.push({ id: m.header.id, acceptedMs: Date.now() })
      return
    }
    run.failures++
    if (run.failureSamples.length < 5) run.failureSamples.push(`${res.status} ${res.text.slice(0, 200)}`)
  } catch (err) {
    run.failures++
    if (run.failureSamples.length < 5) run.failureSamples.push(err instanceof Error ? err.message : String(err))
  }
}

/** `count` POSTs with at most `concurrency` in flight. */
async function sendConcurrent(url: string, phase: string, count: number, concurrency: number, signal: AbortSignal): Promise<SendRun> {
  const run: SendRun = { sent: [], firstSendMs: Date.now(), failures: 0, failureSamples: [] }
  let next = 0
  const worker = async (): Promise<void> => {
    while (!signal.aborted && next < count) await sendOne(url, phase, next++, run)
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker))
  return run
}

/** `count` POSTs started at a steady `rate` per second (each on schedule, not waiting for the previous answer). */
async function sendPaced(url: string, phase: string, count: number, rate: number, signal: AbortSignal): Promise<SendRun> {
  const run: SendRun = { sent: [], firstSendMs: Date.now(), failures: 0, failureSamples: [] }
  const inFlight = new Set<Promise<void>>()
  const t0 = Date.now()
  for (let i = 0; i < count && !signal.aborted; i++) {
    await sleep(t0 + (i * 1000) / rate - Date.now(), signal)
    while (inFlight.size >= PACED_MAX_IN_FLIGHT) await Promise.race(inFlight)
    const p: Promise<void> = sendOne(url, phase, i, run).finally(() => inFlight.delete(p))
    inFlight.add(p)
  }
  await Promise.all(inFlight)
  return run
}

function reportFailures(ctx: BenchContext, what: string, run: SendRun): void {
  if (run.failures === 0) return
  ctx.log(`  !! ${run.failures} ${what} POSTs were not answered 202; first: ${run.failureSamples.join(' | ')}`)
}

/** Names what a member says about messages it has not confirmed (state, or not there at all), a few of them. */
async function explainMissing(ctx: BenchContext, m: MemberDescription, missing: string[]): Promise<void> {
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

/** Waits until every member has confirmed `ids`, printing progress every few seconds; returns the missing ids per member. */
async function waitAll(ctx: BenchContext, watchers: ConfirmationWatcher[], ids: string[], timeoutMs: number): Promise<Map<string, string[]>> {
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

function fmtSummary(s: Summary): string {
  return `p50 ${round(s.p50)} ms, p95 ${round(s.p95)} ms, p99 ${round(s.p99)} ms (min ${round(s.min)}, max ${round(s.max)}, n=${s.count})`
}

export const broadcastScenario: Scenario = {
  name: 'broadcast',
  describe: 'broadcast messages: accepted at one member, pinned, confirmed by every member',
  async run(ctx) {
    const { options: o, members, signal } = ctx
    const sender = members[0]!
    const others = members.slice(1)
    const url = `${sender.api}/api/v1/namespaces/${NAMESPACE}/messages/broadcast`
    const watchers = members.map((m) => new ConfirmationWatcher(m.org, m.api, NAMESPACE))
    for (const w of watchers) w.start(o.timeoutSeconds * 1000, signal)
    try {
      // Warm-up: connections, JIT, the first batch and pin; not measured.
      ctx.log(`warm-up: ${WARMUP_MESSAGES} broadcasts from ${sender.org}`)
      const warm = await sendConcurrent(url, 'warmup', WARMUP_MESSAGES, 10, signal)
      reportFailures(ctx, 'warm-up', warm)
      await waitAll(ctx, watchers, warm.sent.map((s) => s.id), 60_000)
      throwIfAborted(signal)

      // 1. Throughput: many concurrent POSTs at one member; every member confirms them all.
      ctx.log(`throughput: ${o.messages} broadcasts from ${sender.org}, ${o.concurrency} concurrent`)
      const burst = await sendConcurrent(url, 'throughput', o.messages, o.concurrency, signal)
      throwIfAborted(signal)
      reportFailures(ctx, 'throughput', burst)
      const burstIds = burst.sent.map((s) => s.id)
      const first202 = minOf(burst.sent.map((s) => s.acceptedMs))
      const last202 = maxOf(burst.sent.map((s) => s.acceptedMs))
      const acceptedPerSec = burst.sent.length / Math.max(1e-3, (last202 - burst.firstSendMs) / 1000)
      ctx.log(`  accepted ${burst.sent.length} in ${((last202 - burst.firstSendMs) / 1000).toFixed(2)} s: ${acceptedPerSec.toFixed(1)} messages/s at ${sender.org}`)
      ctx.log(`  accepted per second by quarter of the run: ${quarterRates(burst).map((r) => r.toFixed(1)).join(', ')}`)
      const burstMissing = await waitAll(ctx, watchers, burstIds, 60_000 + o.messages * 50)
      throwIfAborted(signal)
      const confirmedPerSec: { [org: string]: Json } = {}
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

      // 2. Latency: a paced run, so that batch timeouts show; 202 at the sender to `confirmed` on every other member.
      ctx.log(`latency: ${o.latencyMessages} broadcasts from ${sender.org} at ${o.rate}/s`)
      const paced = await sendPaced(url, 'latency', o.latencyMessages, o.rate, signal)
      throwIfAborted(signal)
      reportFailures(ctx, 'latency', paced)
      const pacedSeconds = (maxOf(paced.sent.map((s) => s.acceptedMs)) - paced.firstSendMs) / 1000
      ctx.log(`  accepted ${paced.sent.length} in ${pacedSeconds.toFixed(2)} s (${(paced.sent.length / Math.max(1e-3, pacedSeconds)).toFixed(1)}/s achieved)`)
      const pacedIds = paced.sent.map((s) => s.id)
      const pacedMissing = await waitAll(ctx, watchers, pacedIds, 60_000 + o.latencyMessages * 50)
      throwIfAborted(signal)
      const all: number[] = []
      for (const w of watchers) {
        const lat = paced.sent.map((s) => (w.get(s.id)?.confirmedMs ?? NaN) - s.acceptedMs).filter((x) => Number.isFinite(x))
        const isSender = w.org === sender.org
        if (!isSender) for (const x of lat) all.push(x)
        ctx.log(`  ${w.org}${isSender ? ' (sender, not in the figure)' : ''}: ${fmtSummary(summarize(lat))}`)
        await explainMissing(ctx, members.find((m) => m.org === w.org)!, pacedMissing.get(w.org) ?? [])
      }
      const overall = summarize(all)
      ctx.log(`  202-to-confirmed on ${others.map((m) => m.org).join(', ')}: ${fmtSummary(overall)}`)
      for (const w of watchers) if (w.errors > 0) ctx.log(`  !! ${w.org}: ${w.errors} event polls failed; last: ${w.lastError}`)

      return {
        acceptedPerSec: round(acceptedPerSec),
        confirmedPerSec,
        latencyMs: { p50: round(overall.p50), p95: round(overall.p95), p99: round(overall.p99) },
        messages: burst.sent.length,
        concurrency: o.concurrency,
      }
    } finally {
      await Promise.all(watchers.map((w) => w.stop()))
    }
  },
}
