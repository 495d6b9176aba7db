import { explainMissing, recipientLatency, waitAll } from './broadcast.js'
import { fmtCpu, startCpu } from './cpu.js'
import { acceptRate, reportFailures, sendConcurrent, sendPaced, type BodyMaker } from './send.js'
import { maxOf, minOf, round, summarize, type Summary } from './stats.js'
import { throwIfAborted, type BenchContext, type Json, type Scenario } from './types.js'
import { ConfirmationWatcher } from './watch.js'

const NAMESPACE = 'default'
const WARMUP_MESSAGES = 20

/**
 * Pinned private messages from one member to a group of every member: accepted at the sender, delivered to each other
 * member over the exchange, pinned with masked contexts, confirmed by every member in nonce order. The same phases
 * as the broadcast scenario (a concurrent burst, then a paced run for latency), so the figures compare.
 */
export const privateScenario: Scenario = {
  name: 'private',
  describe: 'private messages to a group of every member, pinned then unpinned: delivered peer to peer, confirmed by every member',
  async run(ctx) {
    const { options: o, members, signal } = ctx
    const sender = members[0]!
    const others = members.slice(1)
    const url = `${sender.api}/api/v1/namespaces/${NAMESPACE}/messages/private`
    const group = { name: `bench-${Date.now()}`, members: others.map((m) => ({ identity: m.org })) }
    const body: BodyMaker = (phase, i) => ({ header: { tag: `bench-private-${phase}` }, group, data: [{ value: { phase, i, note: 'parley bench', at: Date.now() } }] })
    const unpinnedBody: BodyMaker = (phase, i) => ({ header: { tag: `bench-private-${phase}`, txtype: 'unpinned' }, group, data: [{ value: { phase, i, note: 'parley bench', at: Date.now() } }] })
    const watchers = members.map((m) => new ConfirmationWatcher(m.org, m.api, NAMESPACE))
    for (const w of watchers) w.start(o.timeoutSeconds * 1000, signal)
    const confirmedPerSec: { [org: string]: Json } = {}
    const unpinnedConfirmedPerSec: { [org: string]: Json } = {}
    let unpinnedAcceptedPerSec = NaN
    let acceptedPerSec = NaN
    let overall: Summary = summarize([])
    let messages = 0
    try {
      // The first send creates the group (its groupinit travels first): out of the measured runs.
      ctx.log(`warm-up: ${WARMUP_MESSAGES} private messages from ${sender.org} to ${others.map((m) => m.org).join(', ')}`)
      const warm = await sendConcurrent(url, 'warmup', WARMUP_MESSAGES, 1, signal, body)
      reportFailures(ctx, 'warm-up', warm)
      await waitAll(ctx, watchers, warm.sent.map((s) => s.id), 60_000)
      throwIfAborted(signal)

      ctx.log(`throughput: ${o.messages} private messages from ${sender.org}, ${o.concurrency} concurrent`)
      const pinned = await burst(ctx, watchers, url, 'throughput', body)
      acceptedPerSec = pinned.acceptedPerSec
      Object.assign(confirmedPerSec, pinned.confirmedPerSec)
      messages = pinned.messages

      ctx.log(`latency: ${o.latencyMessages} private messages from ${sender.org} at ${o.rate}/s`)
      const paced = await sendPaced(url, 'latency', o.latencyMessages, o.rate, signal, body)
      throwIfAborted(signal)
      reportFailures(ctx, 'latency', paced)
      const pacedMissing = await waitAll(ctx, watchers, paced.sent.map((s) => s.id), 60_000 + o.latencyMessages * 50)
      throwIfAborted(signal)
      overall = await recipientLatency(ctx, watchers, paced, sender, pacedMissing)

      // Unpinned (txtype none): delivered at once, never pinned; the sender confirms on accepting, recipients on arrival.
      ctx.log(`unpinned: ${o.messages} unpinned private messages from ${sender.org}, ${o.concurrency} concurrent`)
      const unpinned = await burst(ctx, watchers, url, 'unpinned', unpinnedBody)
      unpinnedAcceptedPerSec = unpinned.acceptedPerSec
      Object.assign(unpinnedConfirmedPerSec, unpinned.confirmedPerSec)
    } finally {
      await Promise.all(watchers.map((w) => w.stop()))
    }
    return {
      acceptedPerSec: round(acceptedPerSec),
      confirmedPerSec,
      latencyMs: { p50: round(overall.p50), p95: round(overall.p95), p99: round(overall.p99) },
      messages,
      concurrency: o.concurrency,
      unpinned: { acceptedPerSec: round(unpinnedAcceptedPerSec), confirmedPerSec: unpinnedConfirmedPerSec },
    }
  },
}

/** Waits until every member has confirmed `ids`, then prints and answers each member's rate from the first 202. */
async function confirmedRates(ctx: BenchContext, watchers: ConfirmationWatcher[], ids: string[], first202: number): Promise<{ [org: string]: Json }> {
  const missing = await waitAll(ctx, watchers, ids, 60_000 + ids.length * 50)
  throwIfAborted(ctx.signal)
  const out: { [org: string]: Json } = {}
  for (const w of watchers) {
    const times = ids.map((id) => w.get(id)?.confirmedMs).filter((t): t is number => t !== undefined)
    const rate = times.length / Math.max(1e-3, (maxOf(times) - first202) / 1000)
    out[w.org] = round(rate)
    ctx.log(`  ${w.org} confirmed ${times.length}/${ids.length}: ${rate.toFixed(1)} messages/s from the first 202`)
    await explainMissing(ctx, ctx.members.find((m) => m.org === w.org)!, missing.get(w.org) ?? [])
  }
  return out
}

/** `--messages` POSTs at `--concurrency`, then every member's confirmation rate from the first 202. */
async function burst(ctx: BenchContext, watchers: ConfirmationWatcher[], url: string, phase: string, body: BodyMaker): Promise<{ acceptedPerSec: number; confirmedPerSec: { [org: string]: Json }; messages: number }> {
  const { options: o, signal } = ctx
  const cpu = startCpu()
  const run = await sendConcurrent(url, phase, o.messages, o.concurrency, signal, body)
  throwIfAborted(signal)
  reportFailures(ctx, phase, run)
  const acceptedPerSec = acceptRate(run).perSec
  ctx.log(`  accepted ${run.sent.length}: ${acceptedPerSec.toFixed(1)} messages/s at ${ctx.members[0]!.org}; bench process CPU ${fmtCpu(cpu.stop())}`)
  const confirmedPerSec = await confirmedRates(ctx, watchers, run.sent.map((s) => s.id), minOf(run.sent.map((s) => s.acceptedMs)))
  return { acceptedPerSec, confirmedPerSec, messages: run.sent.length }
}
