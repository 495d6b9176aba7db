/**
 * What event sockets that stop reading cost a member (issue 11: "a client that stops reading for a minute while
 * 100,000 events occur costs the node no more than a few MiB"). Two phases of the same broadcasts on one member's
 * log: a control without event sockets, then the same with a durable subscriber (readAhead 50) and an ephemeral
 * autoack listener that connect and stop reading at once. The member's node RSS is read before, during and after
 * each phase; the stalled clients' cost is the second phase's growth less the control's. The two ends of each
 * stalled connection are followed in /proc/net/tcp: what the kernel holds in its socket buffers (not the node's
 * memory), and when the node gives up on the connection.
 */
import { readFileSync } from 'node:fs'
import type { MemberDescription } from '../../network/description.js'
import { processMemory } from '../../network/process.js'
import { waitAll, warmUp } from './broadcast.js'
import { MemberTrack, nodePids, readDatabase } from './capacity.js'
import { fmtCpu, startCpu } from './cpu.js'
import { sleep } from './http.js'
import { createSubscription, deleteSubscription, NAMESPACE } from './events.js'
import { acceptRate, reportFailures, sendConcurrent } from './send.js'
import { round, slope } from './stats.js'
import { throwIfAborted, type BenchContext, type Json, type Scenario } from './types.js'
import { ConfirmationWatcher } from './watch.js'
import { openStalled, type StalledClient } from './ws-client.js'

const MiB = 1024 * 1024
const SAMPLE_EVERY_MS = 1000
const READ_AHEAD = 50
/** How long a reading waits for a checkpoint to finish (its worker holds a copy of the database meanwhile). */
const CHECKPOINT_WAIT_MS = 120_000

type Phase = 'idle' | 'control' | 'stalled' | 'after'

interface RssSample {
  atMs: number
  phase: Phase
  rssMiB: number | null
  /** Messages confirmed on the member so far. */
  confirmed: number
  checkpointRunning: boolean
  /** Whether both stalled connections were still open on the node's side. */
  stalledOpen: boolean
}

/** A TCP socket of 127.0.0.1 in /proc/net/tcp: state (hex, 01 established) and the bytes queued in the kernel. */
interface TcpEnd {
  state: string
  txQueue: number
  rxQueue: number
}

/** IPv4 sockets by `localPort>remotePort`. */
function tcpSockets(): Map<string, TcpEnd> {
  const out = new Map<string, TcpEnd>()
  let text: string
  try {
    text = readFileSync('/proc/net/tcp', 'utf8')
  } catch {
    return out
  }
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/)
    if (f.length < 5) continue
    const local = parseInt(f[1]!.split(':')[1]!, 16)
    const remote = parseInt(f[2]!.split(':')[1]!, 16)
    const [tx, rx] = f[4]!.split(':').map((h) => parseInt(h, 16))
    out.set(`${local}>${remote}`, { state: f[3]!, txQueue: tx ?? 0, rxQueue: rx ?? 0 })
  }
  return out
}

const TCP_STATES: Record<string, string> = { '01': 'ESTABLISHED', '04': 'FIN_WAIT1', '05': 'FIN_WAIT2', '06': 'TIME_WAIT', '07': 'CLOSE', '08': 'CLOSE_WAIT', '09': 'LAST_ACK', '0B': 'CLOSING' }

/** One stalled connection as the kernel sees it, both ends. */
class Stall {
  readonly openedMs = Date.now()
  /** When the node's end first left ESTABLISHED (it closed the connection), ms after opening. */
  droppedAfterMs: number | undefined
  droppedState: string | undefined
  maxClientRx = 0
  maxNodeTx = 0
  framesBeforeResume = 0
  framesAfterResume = 0

  constructor(
    readonly label: string,
    readonly client: StalledClient,
    private readonly apiPort: number,
  ) {}

  observe(sockets: Map<string, TcpEnd>): void {
    const mine = sockets.get(`${this.client.localPort}>${this.apiPort}`)
    const node = sockets.get(`${this.apiPort}>${this.client.localPort}`)
    if (mine) this.maxClientRx = Math.max(this.maxClientRx, mine.rxQueue)
    if (node) this.maxNodeTx = Math.max(this.maxNodeTx, node.txQueue)
    if (this.droppedAfterMs === undefined && (node === undefined || node.state !== '01')) {
      this.droppedAfterMs = Date.now() - this.openedMs
      this.droppedState = node ? (TCP_STATES[node.state] ?? node.state) : 'gone'
    }
  }

  get open(): boolean {
    return this.droppedAfterMs === undefined
  }

  describe(): string {
    const dropped = this.droppedAfterMs === undefined ? 'still open on the node at the end' : `closed by the node ${(this.droppedAfterMs / 1000).toFixed(0)} s after it connected (node end ${this.droppedState})`
    return (
      `${this.label}: ${dropped}; at most ${(this.maxClientRx / 1024).toFixed(0)} KiB waiting in the client's receive buffer and ${(this.maxNodeTx / 1024).toFixed(0)} KiB in the node's send buffer (kernel memory); ` +
      `${this.framesBeforeResume} frames read before it stopped reading, ${this.framesAfterResume} more once it read again`
    )
  }
}

function rssMiB(pid: number | undefined): number | null {
  if (pid === undefined) return null
  try {
    const r = processMemory(pid).rss
    return Number.isFinite(r) ? r / MiB : null
  } catch {
    return null
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? NaN : s[Math.floor(s.length / 2)]!
}

const fmt = (n: number, d = 1): string => (Number.isFinite(n) ? n.toFixed(d) : '?')
const signed = (n: number, d = 1): string => (Number.isFinite(n) ? `${n >= 0 ? '+' : ''}${n.toFixed(d)}` : '?')

export const eventsSlowScenario: Scenario = {
  name: 'events-slow',
  describe: "a member's RSS while a durable subscriber and an ephemeral autoack listener stop reading, against the same load without them",
  optIn: true,
  async run(ctx) {
    const { options: o, members, signal } = ctx
    const sender = members[0]!
    // A receiver: the stalled clients' member, whose memory is read, does not also take the 50 concurrent POSTs.
    const target: MemberDescription = members[1] ?? sender
    const apiPort = Number(new URL(target.api).port)
    const url = `${sender.api}/api/v1/namespaces/${NAMESPACE}/messages/broadcast`
    const pid = (): number | undefined => nodePids(ctx).get(target.node)
    const watcher = new ConfirmationWatcher(target.org, target.api, NAMESPACE)
    watcher.start(o.timeoutSeconds * 1000, signal)
    const track = new MemberTrack(target)
    const stop = new AbortController()
    const loopSignal = AbortSignal.any([stop.signal, signal])
    const samples: RssSample[] = []
    const stalls: Stall[] = []
    let phase: Phase = 'idle'
    let statusErrors = 0
    const cpu = startCpu()

    const statusLoop = (async () => {
      while (!loopSignal.aborted) {
        const asked = Date.now()
        try {
          track.observe(await readDatabase(target, 10_000), asked)
        } catch {
          statusErrors++
        }
        await sleep(SAMPLE_EVERY_MS, loopSignal)
      }
    })()
    const sampleLoop = (async () => {
      while (!loopSignal.aborted) {
        const sockets = stalls.length > 0 ? tcpSockets() : undefined
        if (sockets) for (const s of stalls) s.observe(sockets)
        samples.push({
          atMs: Date.now(),
          phase,
          rssMiB: rssMiB(pid()),
          confirmed: watcher.count,
          checkpointRunning: track.checkpointRunning(Date.now()),
          stalledOpen: stalls.length > 0 && stalls.every((s) => s.open),
        })
        await sleep(SAMPLE_EVERY_MS, loopSignal)
      }
    })()

    /** The node's RSS once no checkpoint runs: the median of five readings a few hundred ms apart. */
    const settledRss = async (): Promise<number> => {
      const deadline = Date.now() + CHECKPOINT_WAIT_MS
      while (track.checkpointRunning(Date.now()) && Date.now() < deadline) await sleep(500, signal)
      await sleep(1000, signal)
      const xs: number[] = []
      for (let i = 0; i < 5; i++) {
        const r = rssMiB(pid())
        if (r !== null) xs.push(r)
        await sleep(300, signal)
      }
      throwIfAborted(signal)
      return median(xs)
    }

    /** N broadcasts from the sender, confirmed on the target member. */
    const load = async (label: string): Promise<{ seconds: number; accepted: number }> => {
      const t0 = Date.now()
      const run = await sendConcurrent(url, `events-slow-${label}`, o.slowMessages, o.concurrency, signal)
      throwIfAborted(signal)
      reportFailures(ctx, label, run)
      const missing = (await waitAll(ctx, [watcher], run.sent.map((s) => s.id), 60_000 + o.slowMessages * 50)).get(target.org) ?? []
      throwIfAborted(signal)
      if (missing.length > 0) ctx.log(`  !! ${target.org}: ${missing.length} messages not confirmed in time`)
      const seconds = (Date.now() - t0) / 1000
      ctx.log(`  ${run.sent.length} broadcasts accepted at ${acceptRate(run).perSec.toFixed(0)}/s, confirmed on ${target.org} in ${seconds.toFixed(1)} s (${(run.sent.length / seconds).toFixed(0)}/s)`)
      return { seconds, accepted: run.sent.length }
    }

    const rss: { [k: string]: number } = {}
    let subId: string | undefined
    let control = { seconds: NaN, accepted: 0 }
    let stalled = { seconds: NaN, accepted: 0 }
    try {
      await warmUp(ctx, url, sender, [watcher])
      rss.beforeControl = await settledRss()
      ctx.log(`control: ${o.slowMessages} broadcasts from ${sender.org}, ${o.concurrency} concurrent, no event sockets; ${target.org}'s node RSS ${fmt(rss.beforeControl)} MiB`)
      phase = 'control'
      control = await load('control')
      phase = 'idle'
      rss.afterControl = await settledRss()
      ctx.log(`  ${target.org}'s node RSS ${fmt(rss.afterControl)} MiB`)

      const name = `bench-events-slow-${Date.now()}`
      subId = await createSubscription(target, name, { firstEvent: 'newest', readAhead: READ_AHEAD })
      stalls.push(new Stall(`durable subscriber (readAhead ${READ_AHEAD})`, await openStalled(target.ws, { type: 'start', namespace: NAMESPACE, name }), apiPort))
      stalls.push(new Stall('ephemeral autoack listener', await openStalled(target.ws, { type: 'start', namespace: NAMESPACE, ephemeral: true, autoack: true }), apiPort))
      rss.beforeStalled = await settledRss()
      ctx.log(`stalled: the same ${o.slowMessages} broadcasts with a durable subscriber and an ephemeral autoack listener on ${target.org} that stopped reading at once; ${target.org}'s node RSS ${fmt(rss.beforeStalled)} MiB`)
      phase = 'stalled'
      stalled = await load('stalled')
      phase = 'idle'
      rss.afterStalled = await settledRss()
      ctx.log(`  ${target.org}'s node RSS ${fmt(rss.afterStalled)} MiB`)

      // The clients read again: what reaches them is what the kernel and the node had buffered for them.
      phase = 'after'
      for (const s of stalls) s.framesBeforeResume = s.client.frames
      for (const s of stalls) s.client.resume()
      for (let i = 0; i < 50 && stalls.some((s) => !s.client.closed); i++) await sleep(100, signal)
      for (const s of stalls) {
        s.observe(tcpSockets())
        s.framesAfterResume = s.client.frames - s.framesBeforeResume
        s.client.close()
      }
      await deleteSubscription(ctx, target, subId)
      subId = undefined
      rss.afterClose = await settledRss()
    } finally {
      stop.abort()
      await Promise.all([statusLoop, sampleLoop])
      for (const s of stalls) s.client.close()
      if (subId !== undefined) await deleteSubscription(ctx, target, subId)
      await watcher.stop()
    }
    const benchCpu = cpu.stop()

    const n = o.slowMessages
    const controlGrowth = rss.afterControl! - rss.beforeControl!
    const stalledGrowth = rss.afterStalled! - rss.beforeStalled!
    const attributable = stalledGrowth - controlGrowth
    // RSS against messages confirmed inside each phase, leaving out readings taken while a checkpoint ran.
    const fit = (keep: (s: RssSample) => boolean): { kibPerMessage: number; points: number } => {
      const pts = samples.filter((s) => keep(s) && !s.checkpointRunning && s.rssMiB !== null).map((s) => ({ x: s.confirmed, y: s.rssMiB! }))
      return { kibPerMessage: slope(pts) * 1024, points: pts.length }
    }
    const controlFit = fit((s) => s.phase === 'control')
    const stalledOpenFit = fit((s) => s.phase === 'stalled' && s.stalledOpen)
    const stalledFit = fit((s) => s.phase === 'stalled')
    const during = samples.filter((s) => s.phase === 'stalled' && s.stalledOpen && s.rssMiB !== null)
    const maxDuring = during.reduce((a, s) => Math.max(a, s.rssMiB!), -Infinity)
    const controlMax = samples.filter((s) => s.phase === 'control' && s.rssMiB !== null).reduce((a, s) => Math.max(a, s.rssMiB!), -Infinity)
    const checkpointSamples = samples.filter((s) => s.checkpointRunning).length

    ctx.log(`${target.org}'s node RSS, MiB (each the median of five readings with no checkpoint running):`)
    ctx.log(`  control: ${fmt(rss.beforeControl!)} -> ${fmt(rss.afterControl!)} (${signed(controlGrowth)} over ${control.accepted} messages, ${fmt((controlGrowth * 1024) / n, 2)} KiB each; peak while sending ${fmt(controlMax)})`)
    ctx.log(`  stalled: ${fmt(rss.beforeStalled!)} -> ${fmt(rss.afterStalled!)} (${signed(stalledGrowth)} over ${stalled.accepted} messages, ${fmt((stalledGrowth * 1024) / n, 2)} KiB each; peak while both stalled sockets were open ${fmt(maxDuring)})`)
    ctx.log(`  after closing the stalled sockets: ${fmt(rss.afterClose!)}`)
    ctx.log(`  growth attributable to the stalled clients (stalled phase less control): ${signed(attributable)} MiB`)
    ctx.log(
      `  fitted over the 1 s readings (without checkpoints): control ${fmt(controlFit.kibPerMessage, 2)} KiB per message (${controlFit.points} readings), stalled ${fmt(stalledFit.kibPerMessage, 2)} (${stalledFit.points}), while both stalled sockets were open ${fmt(stalledOpenFit.kibPerMessage, 2)} (${stalledOpenFit.points}); ${checkpointSamples} readings left out for a checkpoint`,
    )
    for (const s of stalls) ctx.log(`  ${s.describe()}`)
    ctx.log(`  bench process CPU over the run: ${fmtCpu(benchCpu)}`)
    if (statusErrors > 0) ctx.log(`  (${statusErrors} /status reads failed)`)
    if (watcher.errors > 0) ctx.log(`  !! ${target.org}: ${watcher.errors} event polls failed; last: ${watcher.lastError}`)

    const stallJson = (s: Stall): Json => ({
      droppedAfterSeconds: s.droppedAfterMs === undefined ? null : round(s.droppedAfterMs / 1000, 1),
      maxClientReceiveQueueKiB: round(s.maxClientRx / 1024, 0),
      maxNodeSendQueueKiB: round(s.maxNodeTx / 1024, 0),
      framesBeforeStopping: s.framesBeforeResume,
      framesAfterResuming: s.framesAfterResume,
    })
    return {
      member: target.org,
      messagesPerPhase: n,
      readAhead: READ_AHEAD,
      controlSeconds: round(control.seconds, 1),
      stalledSeconds: round(stalled.seconds, 1),
      rssMiB: Object.fromEntries(Object.entries(rss).map(([k, v]) => [k, round(v, 1)])),
      controlGrowthMiB: round(controlGrowth, 1),
      stalledGrowthMiB: round(stalledGrowth, 1),
      attributableMiB: round(attributable, 1),
      peakRssWhileStalledMiB: round(maxDuring, 1),
      kibPerMessage: { control: round(controlFit.kibPerMessage, 2), stalled: round(stalledFit.kibPerMessage, 2), stalledWhileOpen: round(stalledOpenFit.kibPerMessage, 2) },
      durable: stalls[0] ? stallJson(stalls[0]) : null,
      ephemeral: stalls[1] ? stallJson(stalls[1]) : null,
      benchCpuPct: round(benchCpu.pctOfCore),
    }
  },
}
