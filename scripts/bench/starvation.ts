/**
 * Whether one client can starve the others (issue 31): two attacks on the first member, each for --attack-seconds,
 * while a probe on connections of its own asks `/status` every 200 ms and sends an ordinary broadcast every 500 ms.
 *
 * - pipelined: 4 connections that each write 5,000 pipelined `GET .../messages?limit=200` in one write and read the
 *   answers as fast as they come, and a fifth that writes as many and reads what its socket buffered (at most 16 KiB) every 200 ms (a slow reader);
 * - trickle: 32 connections that declare a `Content-Length` of 8 MiB and send one byte every 10 s.
 *
 * Each prints the probe's latencies (p50 and max), its failures, and the node's RSS before the attack and at its peak
 * (sampled every 250 ms, until 3 s after the attack's connections closed). The target: both probes answer within 1 s, and RSS stays within 100 MB of its start.
 */
import { connect, type Socket } from 'node:net'
import type { MemberDescription } from '../../network/description.js'
import { nodePids } from './capacity.js'
import { rssMiB } from './cpu.js'
import { get, postJson, sleep } from './http.js'
import { broadcastBody, sendConcurrent } from './send.js'
import { round, summarize } from './stats.js'
import { throwIfAborted, type BenchContext, type Json, type Scenario } from './types.js'

const NAMESPACE = 'default'
/** Broadcasts sent first, so that each page the flood asks for is a full one (200 messages). */
const PRELOAD = 1000
const FLOOD_CONNECTIONS = 4
const FLOOD_REQUESTS = 5000
const TRICKLE_CONNECTIONS = 32
const TRICKLE_DECLARED = 8 * 1024 * 1024
const TRICKLE_EVERY_MS = 10_000
const STATUS_EVERY_MS = 200
const BROADCAST_EVERY_MS = 500
const RSS_EVERY_MS = 250
/** After an attack, how long its RSS peak is still watched (the member finishing what the attack left in flight). */
const SETTLE_MS = 3000
const SLOW_READ_EVERY_MS = 200
/** The targets. */
const TARGET_LATENCY_MS = 1000
const TARGET_RSS_GROWTH_MB = 100

interface Probe {
  statusMs: number[]
  broadcastMs: number[]
  failures: string[]
}

interface AttackFigures {
  statusP50Ms: number | null
  statusMaxMs: number | null
  broadcastP50Ms: number | null
  broadcastMaxMs: number | null
  probeFailures: number
  rssBeforeMiB: number | null
  rssPeakMiB: number | null
  /** Answers the attacking connections received (pages for the flood, refusals for the trickle). */
  attackerAnswers: number
}

/** Runs `attack` for `seconds` while probing the member; the attack's sockets are closed at the end. */
async function underAttack(ctx: BenchContext, m: MemberDescription, seconds: number, attack: (sockets: Socket[]) => Promise<() => number>): Promise<AttackFigures> {
  const pid = nodePids(ctx).get(m.node)
  const rssBefore = rssMiB(pid)
  let rssPeak = rssBefore
  const probe: Probe = { statusMs: [], broadcastMs: [], failures: [] }
  const sockets: Socket[] = []
  let running = true
  const sampler = setInterval(() => {
    const now = rssMiB(pid)
    if (now !== null && (rssPeak === null || now > rssPeak)) rssPeak = now
  }, RSS_EVERY_MS)
  const loop = async (everyMs: number, one: () => Promise<void>): Promise<void> => {
    while (running && !ctx.signal.aborted) {
      const t = Date.now()
      await one()
      await sleep(Math.max(0, everyMs - (Date.now() - t)))
    }
  }
  const timed = async (into: number[], what: string, call: () => Promise<{ status: number; text: string }>, ok: number): Promise<void> => {
    const t = performance.now()
    try {
      const r = await call()
      into.push(performance.now() - t)
      if (r.status !== ok) probe.failures.push(`${what}: ${r.status} ${r.text.slice(0, 160)}`)
    } catch (err) {
      probe.failures.push(`${what}: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  let i = 0
  try {
    const answers = await attack(sockets)
    const probes = [
      loop(STATUS_EVERY_MS, () => timed(probe.statusMs, 'status', () => get(`${m.api}/api/v1/status`, 30_000), 200)),
      loop(BROADCAST_EVERY_MS, () => timed(probe.broadcastMs, 'broadcast', () => postJson(`${m.api}/api/v1/namespaces/${NAMESPACE}/messages/broadcast`, broadcastBody('starvation', i++), 30_000), 202)),
    ]
    await sleep(seconds * 1000)
    running = false
    await Promise.all(probes)
    for (const s of sockets) s.destroy()
    // What the attack left in flight is finished (and its memory counted) before the figures are read.
    await sleep(SETTLE_MS)
    throwIfAborted(ctx.signal)
    const status = summarize(probe.statusMs)
    const broadcast = summarize(probe.broadcastMs)
    return {
      statusP50Ms: round(status.p50),
      statusMaxMs: round(status.max),
      broadcastP50Ms: round(broadcast.p50),
      broadcastMaxMs: round(broadcast.max),
      probeFailures: probe.failures.length,
      rssBeforeMiB: round(rssBefore ?? NaN),
      rssPeakMiB: round(rssPeak ?? NaN),
      attackerAnswers: answers(),
    }
  } finally {
    running = false
    clearInterval(sampler)
    for (const s of sockets) s.destroy()
    if (probe.failures.length > 0) ctx.log(`  probe failures (${probe.failures.length}), first: ${probe.failures.slice(0, 3).join(' | ')}`)
  }
}

function open(m: MemberDescription, sockets: Socket[]): Promise<Socket> {
  const u = new URL(m.api)
  const s = connect(Number(u.port), u.hostname)
  sockets.push(s)
  // The member may drop an attacking connection: that is its right, not the benchmark's failure.
  s.on('error', () => {})
  return new Promise((resolve, reject) => {
    s.once('connect', () => resolve(s))
    s.once('error', reject)
  })
}

/** Counts answers by their status lines as they stream past (one split across two reads is missed: a floor). */
function countAnswers(s: Socket, counter: { n: number }): void {
  s.on('data', (c: Buffer) => {
    let at = c.indexOf('HTTP/1.1 ')
    while (at >= 0) {
      counter.n++
      at = c.indexOf('HTTP/1.1 ', at + 9)
    }
  })
}

async function pipelinedFlood(m: MemberDescription, sockets: Socket[]): Promise<() => number> {
  const u = new URL(m.api)
  const request = `GET /api/v1/namespaces/${NAMESPACE}/messages?limit=200 HTTP/1.1\r\nHost: ${u.host}\r\n\r\n`
  const flood = request.repeat(FLOOD_REQUESTS)
  const counter = { n: 0 }
  for (let c = 0; c < FLOOD_CONNECTIONS; c++) {
    const s = await open(m, sockets)
    countAnswers(s, counter)
    s.write(flood)
  }
  const slow = await open(m, sockets)
  slow.pause()
  slow.write(flood)
  const reader = setInterval(() => {
    const chunk = slow.read() as Buffer | null
    if (chunk === null && slow.destroyed) clearInterval(reader)
  }, SLOW_READ_EVERY_MS)
  slow.once('close', () => clearInterval(reader))
  return () => counter.n
}

async function tricklingBodies(m: MemberDescription, sockets: Socket[]): Promise<() => number> {
  const u = new URL(m.api)
  const head = `POST /api/v1/namespaces/${NAMESPACE}/messages/broadcast HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: ${TRICKLE_DECLARED}\r\n\r\n{`
  const counter = { n: 0 }
  const trickling: Socket[] = []
  for (let c = 0; c < TRICKLE_CONNECTIONS; c++) {
    const s = await open(m, sockets)
    countAnswers(s, counter)
    s.write(head)
    trickling.push(s)
  }
  const drip = setInterval(() => {
    for (const s of trickling) if (s.writable) s.write(' ')
  }, TRICKLE_EVERY_MS)
  trickling[0]!.once('close', () => clearInterval(drip))
  // The drip stops with the attack: its sockets are destroyed then.
  drip.unref()
  return () => counter.n
}

function report(ctx: BenchContext, name: string, f: AttackFigures): Json {
  const growth = f.rssBeforeMiB !== null && f.rssPeakMiB !== null ? round(f.rssPeakMiB - f.rssBeforeMiB) : null
  const growthMB = growth === null ? null : (growth * 1024 * 1024) / 1e6
  const met = (f.statusMaxMs ?? Infinity) <= TARGET_LATENCY_MS && (f.broadcastMaxMs ?? Infinity) <= TARGET_LATENCY_MS && f.probeFailures === 0 && growthMB !== null && growthMB <= TARGET_RSS_GROWTH_MB
  ctx.log(
    `  ${name}: /status p50 ${f.statusP50Ms} ms, max ${f.statusMaxMs} ms; broadcast p50 ${f.broadcastP50Ms} ms, max ${f.broadcastMaxMs} ms; ` +
      `${f.probeFailures} probe failures; RSS ${f.rssBeforeMiB} MiB before, peak ${f.rssPeakMiB} MiB (+${growth} MiB); ` +
      `${f.attackerAnswers} answers to the attackers; target ${met ? 'met' : 'MISSED'}`,
  )
  return { ...f, rssGrowthMiB: growth, targetMet: met }
}

export const starvationScenario: Scenario = {
  name: 'starvation',
  describe: 'a pipelined flood (4 connections and a slow reader) and 32 trickling bodies against one member, probed with /status and broadcasts',
  optIn: true,
  async run(ctx) {
    const m = ctx.members[0]!
    const seconds = ctx.options.attackSeconds
    ctx.log(`  pre-loading ${PRELOAD} broadcasts so that every page the flood asks for is full`)
    const preload = await sendConcurrent(`${m.api}/api/v1/namespaces/${NAMESPACE}/messages/broadcast`, 'starvation-preload', PRELOAD, 50, ctx.signal)
    if (preload.failures > 0) throw new Error(`the pre-load had ${preload.failures} failures: ${preload.failureSamples.join(' | ')}`)
    // Lets the pre-load's batches settle so that the attacks start from a quiet member.
    await sleep(3000)
    throwIfAborted(ctx.signal)

    ctx.log(`  pipelined flood for ${seconds} s: ${FLOOD_CONNECTIONS} connections x ${FLOOD_REQUESTS} GET messages?limit=200 in one write each, and a slow reader`)
    const pipelined = report(ctx, 'pipelined', await underAttack(ctx, m, seconds, (sockets) => pipelinedFlood(m, sockets)))

    ctx.log(`  trickling bodies for ${seconds} s: ${TRICKLE_CONNECTIONS} connections declaring ${TRICKLE_DECLARED} bytes, a byte every ${TRICKLE_EVERY_MS / 1000} s`)
    const trickle = report(ctx, 'trickle', await underAttack(ctx, m, seconds, (sockets) => tricklingBodies(m, sockets)))
    return { attackSeconds: seconds, pipelined, trickle }
  },
}
