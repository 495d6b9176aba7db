/**
 * Events over WebSockets (issue 11): how fast a member delivers its event log's backlog to one durable subscriber
 * that acknowledges every event (readAhead 50) and to one ephemeral autoack listener, beside a bare `ws` server in
 * its own process replaying the very frames the member sent, to the same client, in the same run.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { MemberDescription } from '../../network/description.js'
import { startBareProcess } from './bare.js'
import { waitAll } from './broadcast.js'
import { nodePids } from './capacity.js'
import { fmtCpu, restOf, startCpu, startMachineCpu, startProcessCpu, type CpuFigure } from './cpu.js'
import { del, getJson, postJson, sleep } from './http.js'
import { reportFailures, sendConcurrent } from './send.js'
import { round } from './stats.js'
import { throwIfAborted, type BenchContext, type Json, type Scenario } from './types.js'
import { ConfirmationWatcher } from './watch.js'
import { drainEvents, type DrainOptions, type DrainResult } from './ws-client.js'

export const NAMESPACE = 'default'
/** The durable subscriber's readAhead: it may have readAhead + 1 events unacknowledged. */
const READ_AHEAD = 50
/** Events of the backlog's tail delivered (unmeasured) before each measured run: sockets, JIT, the first pages. */
const WARMUP_EVENTS = 1000
const PAGE = 1000
/**
 * Runs of each kind; the fastest is the figure, as other work on the machine can only slow a run down (each run's
 * rate is printed). The bare server's runs last a fraction of a second, so it gets more of them.
 */
const NODE_RUNS = 3
const BARE_RUNS = 5
/** Other work on the machine during a run, % of one core, past which the run is flagged. */
const BUSY_MACHINE_PCT = 50
/** The events-per-second target to one client, and the share of the bare server's rate (issue 11, item 6). */
const TARGET_PER_SEC = 5000
const TARGET_VS_BARE = 0.5

interface EventRow {
  sequence: number
  type: string
}

/** The namespace's events on a member, ascending, paged by sequence (no `skip`, no references). */
export async function listEvents(api: string): Promise<EventRow[]> {
  const out: EventRow[] = []
  let cursor = 0
  for (;;) {
    const page = await getJson<EventRow[]>(`${api}/api/v1/namespaces/${NAMESPACE}/events?sequence=%3E${cursor}&sort=sequence&limit=${PAGE}`)
    for (const e of page) out.push({ sequence: e.sequence, type: e.type })
    if (page.length < PAGE) return out
    cursor = page[page.length - 1]!.sequence
  }
}

/** The namespace's newest event's sequence on a member (the list is newest first by default); 0 when empty. */
export async function lastSequence(api: string): Promise<number> {
  const page = await getJson<EventRow[]>(`${api}/api/v1/namespaces/${NAMESPACE}/events?limit=1`)
  return page[0]?.sequence ?? 0
}

/** Waits until a member's log has not grown for a second (the last batches' chain events land after confirmation). */
async function settleLog(ctx: BenchContext, api: string, limitMs = 30_000): Promise<number> {
  const deadline = Date.now() + limitMs
  let last = await lastSequence(api)
  while (Date.now() < deadline) {
    await sleep(1000, ctx.signal)
    throwIfAborted(ctx.signal)
    const now = await lastSequence(api)
    if (now === last) return now
    last = now
  }
  return last
}

/** Creates a durable subscription over WebSockets; returns its id. */
export async function createSubscription(m: MemberDescription, name: string, options: { firstEvent: string; readAhead: number }): Promise<string> {
  const res = await postJson(`${m.api}/api/v1/namespaces/${NAMESPACE}/subscriptions`, { name, transport: 'websockets', options })
  if (res.status < 200 || res.status > 299) throw new Error(`creating subscription ${name} on ${m.org} answered ${res.status}: ${res.text.slice(0, 300)}`)
  const id = (JSON.parse(res.text) as { id?: unknown }).id
  if (typeof id !== 'string') throw new Error(`creating subscription ${name} on ${m.org} answered without an id: ${res.text.slice(0, 300)}`)
  return id
}

export async function deleteSubscription(ctx: BenchContext, m: MemberDescription, id: string): Promise<void> {
  try {
    const res = await del(`${m.api}/api/v1/namespaces/${NAMESPACE}/subscriptions/${id}`)
    if (res.status !== 204 && res.status !== 200) ctx.log(`  !! deleting subscription ${id} on ${m.org} answered ${res.status}: ${res.text.slice(0, 200)}`)
  } catch (err) {
    ctx.log(`  !! deleting subscription ${id} on ${m.org} failed: ${err instanceof Error ? err.message : String(err)}`)
  }
}

interface Measured {
  r: DrainResult
  bench: CpuFigure
  /** The server measured (the member's node, or the bare server), % of one core over the drain. */
  serverPct: number
  /** The network's other processes (for the bare runs: all of them), % of one core. */
  othersPct: number
  restPct: number
}

/** One drain with the CPU of this process, the server, the rest of the network and the machine around it. */
async function measure(ctx: BenchContext, serverPid: number, o: DrainOptions): Promise<Measured> {
  const others = ctx.processes.map((p) => p.pid).filter((p) => p !== serverPid)
  const machine = startMachineCpu()
  const bench = startCpu()
  const server = startProcessCpu([serverPid])
  const network = startProcessCpu(others)
  const r = await drainEvents(o)
  const benchCpu = bench.stop()
  const serverPct = server.stop()
  const othersPct = network.stop()
  const restPct = restOf(machine.stop(), benchCpu.pctOfCore, serverPct, othersPct)
  throwIfAborted(ctx.signal)
  return { r, bench: benchCpu, serverPct, othersPct, restPct }
}

function fmtDrain(r: DrainResult): string {
  const checks = `${r.duplicates} duplicates, ${r.missing} missing, ${r.outOfOrder} out of order${r.unexpected > 0 ? `, ${r.unexpected} beyond the backlog` : ''}`
  return `${r.perSec.toFixed(0)} events/s (${r.frames} frames in ${r.seconds.toFixed(2)} s from the first to the last; first frame ${r.firstFrameMs.toFixed(0)} ms after the socket opened); ${checks}`
}

/** Runs `n` times; the fastest run is the figure, every run's problems are printed, and whether any run was clean. */
async function fastest(ctx: BenchContext, n: number, label: string, run: (i: number) => Promise<Measured>): Promise<{ best: Measured; all: Measured[] }> {
  const all: Measured[] = []
  for (let i = 0; i < n; i++) {
    const m = await run(i)
    if (m.r.problem) ctx.log(`  !! ${label}, run ${i + 1}: ${m.r.problem}`)
    if (m.r.duplicates + m.r.missing + m.r.outOfOrder > 0) ctx.log(`  !! ${label}, run ${i + 1}: ${m.r.duplicates} duplicates, ${m.r.missing} missing, ${m.r.outOfOrder} out of order`)
    all.push(m)
  }
  const best = all.reduce((a, b) => (b.r.perSec > a.r.perSec ? b : a))
  return { best, all }
}

function report(ctx: BenchContext, label: string, runs: { best: Measured; all: Measured[] }, server: string): void {
  const m = runs.best
  const rates = runs.all.map((x) => x.r.perSec.toFixed(0)).join(', ')
  ctx.log(`  ${label}, fastest of ${runs.all.length} (${rates}/s): ${fmtDrain(m.r)}`)
  if (m.restPct > BUSY_MACHINE_PCT) ctx.log(`  !! other work on the machine took ${m.restPct.toFixed(0)} % of a core during that run: the figure is low`)
  ctx.log(`    bench process CPU: ${fmtCpu(m.bench)}; ${server} ${m.serverPct.toFixed(1)} %, ${server === 'the bare server' ? "the network's processes" : "the network's other processes"} ${m.othersPct.toFixed(1)} %, the rest of the machine ${m.restPct.toFixed(1)} %`)
}

function section(runs: { best: Measured; all: Measured[] } | undefined): { [key: string]: Json } | null {
  if (!runs) return null
  const m = runs.best
  const r = m.r
  return {
    eventsPerSec: round(r.perSec),
    runsEventsPerSec: runs.all.map((x) => round(x.r.perSec)),
    runsClean: runs.all.every((x) => !x.r.problem && x.r.duplicates + x.r.missing + x.r.outOfOrder === 0),
    events: r.frames,
    seconds: round(r.seconds, 3),
    firstFrameMs: round(r.firstFrameMs),
    duplicates: r.duplicates,
    missing: r.missing,
    outOfOrder: r.outOfOrder,
    beyondBacklog: r.unexpected,
    problem: r.problem ?? null,
    benchCpuPct: round(m.bench.pctOfCore),
    serverCpuPct: round(m.serverPct),
    othersCpuPct: round(m.othersPct),
    restCpuPct: round(m.restPct),
  }
}

/** Tops a member's log up to `target` events with broadcasts from it, confirmed on every member; returns how many were sent. */
async function fillLog(ctx: BenchContext, m: MemberDescription, have: number, target: number): Promise<number> {
  const need = target - have
  if (need <= 0) return 0
  const { options: o, signal } = ctx
  ctx.log(`filling the log: ${need} broadcasts from ${m.org} (${have} events there), ${o.concurrency} concurrent`)
  const watchers = ctx.members.map((x) => new ConfirmationWatcher(x.org, x.api, NAMESPACE))
  for (const w of watchers) w.start(o.timeoutSeconds * 1000, signal)
  try {
    const t0 = Date.now()
    const run = await sendConcurrent(`${m.api}/api/v1/namespaces/${NAMESPACE}/messages/broadcast`, 'events', need, o.concurrency, signal)
    throwIfAborted(signal)
    reportFailures(ctx, 'filling', run)
    // Every member confirmed, so that none of them is still busy with it while delivery is measured.
    const missing = await waitAll(ctx, watchers, run.sent.map((s) => s.id), 60_000 + need * 50)
    throwIfAborted(signal)
    for (const [org, ids] of missing) if (ids.length > 0) ctx.log(`  !! ${org}: ${ids.length} of the filling broadcasts not confirmed in time`)
    ctx.log(`  sent and confirmed everywhere in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
    return run.sent.length
  } finally {
    await Promise.all(watchers.map((w) => w.stop()))
  }
}

export const eventsScenario: Scenario = {
  name: 'events',
  describe: 'events over WebSockets: a backlog of the log delivered to a durable subscriber with acks and to an ephemeral autoack listener, beside a bare ws server replaying the same frames',
  async run(ctx) {
    const { options: o, signal } = ctx
    const m = ctx.members[0]!
    const nodePid = nodePids(ctx).get(m.node)
    if (nodePid === undefined) throw new Error(`no PID for ${m.node}`)

    // 1. The backlog: whatever earlier scenarios left in the log, topped up to --event-backlog with broadcasts.
    const had = (await listEvents(m.api)).length
    const filled = await fillLog(ctx, m, had, o.eventBacklog)
    await settleLog(ctx, m.api)
    const events = await listEvents(m.api)
    const expected = events.map((e) => e.sequence)
    const last = expected.at(-1) ?? 0
    const byType = new Map<string, number>()
    for (const e of events) byType.set(e.type, (byType.get(e.type) ?? 0) + 1)
    ctx.log(`backlog: ${expected.length} events on ${m.org} (sequences ${expected[0] ?? '-'}..${last}): ${[...byType].map(([t, n]) => `${n} ${t}`).join(', ')}`)
    if (expected.length < WARMUP_EVENTS * 2) throw new Error(`the backlog has only ${expected.length} events`)
    const tail = expected.slice(-WARMUP_EVENTS)
    const tailAfter = String(tail[0]! - 1)
    const timeoutMs = 60_000 + expected.length * 3

    // 2. The member: warm-ups on the log's tail (unmeasured), then the whole backlog to each kind of client.
    const ws = m.ws
    const durableStart = (name: string): object => ({ type: 'start', namespace: NAMESPACE, name })
    const ephemeralStart = (firstEvent: string): object => ({ type: 'start', namespace: NAMESPACE, ephemeral: true, autoack: true, options: { firstEvent } })
    const stamp = Date.now()
    {
      const warmId = await createSubscription(m, `bench-events-warmup-${stamp}`, { firstEvent: tailAfter, readAhead: READ_AHEAD })
      try {
        const w = await drainEvents({ url: ws, start: durableStart(`bench-events-warmup-${stamp}`), expected: tail, ack: true, capture: false, timeoutMs, signal })
        throwIfAborted(signal)
        if (w.problem) ctx.log(`  !! durable warm-up: ${w.problem}`)
      } finally {
        await deleteSubscription(ctx, m, warmId)
      }
      const w = await drainEvents({ url: ws, start: ephemeralStart(tailAfter), expected: tail, ack: false, capture: false, timeoutMs, signal })
      throwIfAborted(signal)
      if (w.problem) ctx.log(`  !! ephemeral warm-up: ${w.problem}`)
    }

    ctx.log(`durable subscriptions on ${m.org} (firstEvent oldest, readAhead ${READ_AHEAD}, a fresh one per run), the client acknowledging each event as it parses it`)
    let captured: string[] = []
    const durable = await fastest(ctx, NODE_RUNS, 'durable', async (i) => {
      const name = `bench-events-${stamp}-${i + 1}`
      const subId = await createSubscription(m, name, { firstEvent: 'oldest', readAhead: READ_AHEAD })
      try {
        const x = await measure(ctx, nodePid, { url: ws, start: durableStart(name), expected, ack: true, capture: i === 0, timeoutMs, signal })
        if (i === 0) captured = x.r.captured
        x.r.captured = []
        return x
      } finally {
        await deleteSubscription(ctx, m, subId)
      }
    })
    report(ctx, 'durable, acked', durable, `${m.org}'s node`)

    ctx.log(`ephemeral listeners on ${m.org} (firstEvent oldest, autoack)`)
    const ephemeral = await fastest(ctx, NODE_RUNS, 'ephemeral', () => measure(ctx, nodePid, { url: ws, start: ephemeralStart('oldest'), expected, ack: false, capture: false, timeoutMs, signal }))
    report(ctx, 'ephemeral, autoack', ephemeral, `${m.org}'s node`)

    // 3. The bare server: the first durable run's frames, one per sequence, in order, byte for byte.
    const frames: string[] = []
    const bareSeqs: number[] = []
    {
      let prev = 0
      for (const text of captured) {
        const seq = (JSON.parse(text) as { sequence: number }).sequence
        if (seq <= prev) continue
        prev = seq
        frames.push(text)
        bareSeqs.push(seq)
      }
    }
    captured = []
    const frameBytes = frames.reduce((a, f) => a + f.length, 0) / Math.max(1, frames.length)
    let bareAck: { best: Measured; all: Measured[] } | undefined
    let barePush: { best: Measured; all: Measured[] } | undefined
    if (frames.length < WARMUP_EVENTS * 2) {
      ctx.log(`  !! the first durable run captured only ${frames.length} frames: no bare comparison`)
    } else {
      const file = join(ctx.dir, 'bench-events-frames.json')
      writeFileSync(file, JSON.stringify(frames))
      ctx.log(`bare ws server: the first durable run's ${frames.length} frames (${frameBytes.toFixed(0)} bytes on average) replayed from a process of its own to the same client`)
      const { pid, port } = await startBareProcess(ctx, 'scripts/bench/bare-ws-server.ts', 'bench-bare-ws-server', [file])
      try {
        const url = (q: string): string => `ws://127.0.0.1:${port}/?${q}`
        const from = frames.length - WARMUP_EVENTS
        const bareTail = bareSeqs.slice(from)
        for (const q of [`mode=ack&window=${READ_AHEAD + 1}&from=${from}`, `mode=push&from=${from}`]) {
          const w = await drainEvents({ url: url(q), expected: bareTail, ack: q.startsWith('mode=ack'), capture: false, timeoutMs, signal })
          throwIfAborted(signal)
          if (w.problem) ctx.log(`  !! bare warm-up: ${w.problem}`)
        }
        const mode = (q: string, ack: boolean): Promise<{ best: Measured; all: Measured[] }> =>
          fastest(ctx, BARE_RUNS, 'bare', () => measure(ctx, pid, { url: url(q), expected: bareSeqs, ack, capture: false, timeoutMs, signal }))
        bareAck = await mode(`mode=ack&window=${READ_AHEAD + 1}`, true)
        report(ctx, `bare, acked (≤ ${READ_AHEAD + 1} unacknowledged)`, bareAck, 'the bare server')
        barePush = await mode('mode=push', false)
        report(ctx, 'bare, pushed', barePush, 'the bare server')
      } finally {
        await ctx.children.stop(pid)
      }
    }

    const durableVsBare = bareAck ? durable.best.r.perSec / bareAck.best.r.perSec : NaN
    const ephemeralVsBare = barePush ? ephemeral.best.r.perSec / barePush.best.r.perSec : NaN
    const clean = (x: { all: Measured[] }): boolean => x.all.every((y) => !y.r.problem && y.r.duplicates + y.r.missing + y.r.outOfOrder === 0)
    const met = (x: { best: Measured; all: Measured[] }, ratio: number): string =>
      `${x.best.r.perSec >= TARGET_PER_SEC ? 'meets' : 'misses'} ${TARGET_PER_SEC.toLocaleString('en-US')}/s, ${ratio >= TARGET_VS_BARE ? 'meets' : Number.isFinite(ratio) ? 'misses' : 'no figure for'} ${TARGET_VS_BARE}× bare${clean(x) ? '' : '; NOT every event exactly once in order in every run'}`
    ctx.log(`  durable / bare acked: ${durableVsBare.toFixed(3)} (${durable.best.r.perSec.toFixed(0)}/s vs ${bareAck?.best.r.perSec.toFixed(0) ?? '?'}/s): ${met(durable, durableVsBare)}`)
    ctx.log(`  ephemeral / bare pushed: ${ephemeralVsBare.toFixed(3)} (${ephemeral.best.r.perSec.toFixed(0)}/s vs ${barePush?.best.r.perSec.toFixed(0) ?? '?'}/s): ${met(ephemeral, ephemeralVsBare)}`)

    return {
      member: m.org,
      backlogEvents: expected.length,
      backlogByType: Object.fromEntries(byType),
      broadcastsSent: filled,
      frameBytes: round(frameBytes, 0),
      readAhead: READ_AHEAD,
      durable: section(durable),
      ephemeral: section(ephemeral),
      bareAcked: section(bareAck),
      barePushed: section(barePush),
      durableEventsPerSec: round(durable.best.r.perSec),
      ephemeralEventsPerSec: round(ephemeral.best.r.perSec),
      bareAckedEventsPerSec: bareAck ? round(bareAck.best.r.perSec) : null,
      barePushedEventsPerSec: barePush ? round(barePush.best.r.perSec) : null,
      durableVsBare: round(durableVsBare, 3),
      ephemeralVsBare: round(ephemeralVsBare, 3),
      benchCpuPct: {
        durable: round(durable.best.bench.pctOfCore),
        ephemeral: round(ephemeral.best.bench.pctOfCore),
        bareAcked: bareAck ? round(bareAck.best.bench.pctOfCore) : null,
        barePushed: barePush ? round(barePush.best.bench.pctOfCore) : null,
      },
    }
  },
}
