/**
 * What event sockets that stop reading cost a member (issue 11: "a client that stops reading for a minute while
 * 100,000 events occur costs the node no more than a few MiB"). Broadcasts from one member, read on another (whose
 * node takes no POSTs) in three phases after an unmeasured pre-load: a control of N/2 without event sockets, N
 * with a durable subscriber (readAhead 50) and an ephemeral autoack listener that connect and stop reading at once,
 * then another control of N/2 once they are gone. The node's RSS is read between the phases (no checkpoint
 * running) and every second; the stalled clients' cost is the stalled phase's growth less the two controls'
 * together, which bracket it so that a drift over the run cancels, and whose difference shows how far RSS moves
 * between like phases anyway. Both ends of each stalled connection are followed in /proc/net/tcp: what the kernel
 * holds in its socket buffers (not the node's memory), and when the node gives up on the connection.
 */
import { readFileSync } from 'node:fs'
import type { MemberDescription } from '../../network/description.js'
import { waitAll, warmUp } from './broadcast.js'
import { MemberTrack, nodePids, readDatabase } from './capacity.js'
import { fmtCpu, rssMiB, startCpu } from './cpu.js'
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
/** Broadcasts sent before the control phase (at most --slow-messages), so that it does not carry the node's start-up growth. */
const PRELOAD_MESSAGES = 20_000
const CHECKPOINT_MARGIN_MS = 5_000

type Phase = 'idle' | 'control1' | 'stalled' | 'control2'

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

/** One stalled connection as the kernel sees it, both ends, followed until the client reads again. */
class Stall {
  readonly openedMs = Date.now()
  /** When the node's end first left ESTABLISHED (the node closed the connection), ms after opening. */
  droppedAfterMs: number | undefined
  droppedState: string | undefined
  maxClientRx = 0
  maxNodeTx = 0
  /** The kernel's queues when the client read again: what it then received beyond them came from the node's memory. */
  clientRxAtResume = 0
  nodeTxAtResume = 0
  framesBeforeResume = 0
  framesAfterResume = 0
  bytesAfterResume = 0
  private bytesBeforeResume = 0
  private watching = true

  constructor(
    readonly label: string,
    readonly client: StalledClient,
    private readonly apiPort: number,
  ) {}

  observe(sockets: Map<string, TcpEnd>): void {
    if (!this.watching) return
    const mine = sockets.get(`${this.client.localPort}>${this.apiPort}`)
    const node = sockets.get(`${this.apiPort}>${this.client.localPort}`)
    this.clientRxAtResume = mine?.rxQueue ?? 0
    this.nodeTxAtResume = node?.txQueue ?? 0
    this.maxClientRx = Math.max(this.maxClientRx, this.clientRxAtResume)
    this.maxNodeTx = Math.max(this.maxNodeTx, this.nodeTxAtResume)
    if (this.droppedAfterMs === undefined && (node === undefined || node.state !== '01')) {
      this.droppedAfterMs = Date.now() - this.openedMs
      this.droppedState = node ? (TCP_STATES[node.state] ?? node.state) : 'gone'
    }
  }

  /** Reads the kernel's queues one last time, then lets the client read. */
  resume(): void {
    this.observe(tcpSockets())
    this.watching = false
    this.framesBeforeResume = this.client.frames
    this.bytesBeforeResume = this.client.bytes
    this.client.resume()
  }

  /** Once the client has read what it could: what reached it. */
  settle(): void {
    this.framesAfterResume = this.client.frames - this.framesBeforeResume
    this.bytesAfterResume = this.client.bytes - this.bytesBeforeResume
  }

  get open(): boolean {
    return this.droppedAfterMs === undefined
  }

  describe(): string {
    const dropped = this.droppedAfterMs === undefined ? 'still open when it read again' : `closed by the node ${(this.droppedAfterMs / 1000).toFixed(0)} s after it connected (node end ${this.droppedState})`
    return (
      `${this.label}: ${dropped}; kernel buffers at most ${(this.maxClientRx / 1024).toFixed(0)} KiB on the client's side and ${(this.maxNodeTx / 1024).toFixed(0)} KiB on the node's (kernel memory); ` +
      `${this.framesBeforeResume} frames read before it stopped reading; once it read again ${this.framesAfterResume} frames (${(this.bytesAfterResume / 1024).toFixed(0)} KiB: ` +
      `the kernel's ${((this.clientRxAtResume + this.nodeTxAtResume) / 1024).toFixed(0)} KiB, then what the node held and what it read from the log since)`
    )
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
  describe: "a member's RSS while a durable subscriber and an ephemeral autoack listener stop reading, against controls of the same load without them",
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
        if (stalls.length > 0) {
          const sockets = tcpSockets()
          for (const s of stalls) s.observe(sockets)
        }
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

    /** Broadcasts from the sender, confirmed on the target member. */
    const load = async (label: string, count: number): Promise<number> => {
      const t0 = Date.now()
      const run = await sendConcurrent(url, `events-slow-${label}`, count, o.concurrency, signal)
      throwIfAborted(signal)
      reportFailures(ctx, label, run)
      const missing = (await waitAll(ctx, [watcher], run.sent.map((s) => s.id), 60_000 + count * 50)).get(target.org) ?? []
      throwIfAborted(signal)
      if (missing.length > 0) ctx.log(`  !! ${target.org}: ${missing.length} messages not confirmed in time`)
      const seconds = (Date.now() - t0) / 1000
      ctx.log(`  ${run.sent.length} broadcasts accepted at ${acceptRate(run).perSec.toFixed(0)}/s, confirmed on ${target.org} in ${seconds.toFixed(1)} s (${(run.sent.length / seconds).toFixed(0)}/s)`)
      return run.sent.length
    }

    const half = Math.floor(o.slowMessages / 2)
    const rss = { start: NaN, beforeStalled: NaN, stalled: NaN, afterClose: NaN, end: NaN }
    const sent = { control1: 0, stalled: 0, control2: 0 }
    let stalledSeconds = NaN
    let subId: string | undefined
    try {
      await warmUp(ctx, url, sender, [watcher])
      // A node's heap grows over its first minutes whatever it does: that growth belongs to no phase.
      const preload = Math.min(o.slowMessages, PRELOAD_MESSAGES)
      ctx.log(`pre-load (not measured): ${preload} broadcasts from ${sender.org}`)
      await load('preload', preload)

      rss.start = await settledRss()
      ctx.log(`control 1: ${half} broadcasts from ${sender.org}, ${o.concurrency} concurrent, no event sockets on ${target.org}; its node's RSS ${fmt(rss.start)} MiB`)
      phase = 'control1'
      sent.control1 = await load('control1', half)
      phase = 'idle'

      const name = `bench-events-slow-${Date.now()}`
      subId = await createSubscription(target, name, { firstEvent: 'newest', readAhead: READ_AHEAD })
      stalls.push(new Stall(`durable subscriber (readAhead ${READ_AHEAD})`, await openStalled(target.ws, { type: 'start', namespace: NAMESPACE, name }), apiPort))
      stalls.push(new Stall('ephemeral autoack listener', await openStalled(target.ws, { type: 'start', namespace: NAMESPACE, ephemeral: true, autoack: true }), apiPort))
      rss.beforeStalled = await settledRss()
      ctx.log(`stalled: ${o.slowMessages} broadcasts with a durable subscriber and an ephemeral autoack listener on ${target.org} that stopped reading at once; its node's RSS ${fmt(rss.beforeStalled)} MiB`)
      phase = 'stalled'
      const t0 = Date.now()
      sent.stalled = await load('stalled', o.slowMessages)
      stalledSeconds = (Date.now() - t0) / 1000
      phase = 'idle'
      rss.stalled = await settledRss()
      ctx.log(`  ${target.org}'s node RSS ${fmt(rss.stalled)} MiB with the stalled sockets ${stalls.every((s) => s.open) ? 'still open' : 'closed by the node meanwhile'}`)

      // The clients read again: first what the kernel held for them, then what the node held and reads since.
      for (const s of stalls) s.resume()
      // Until each has read all there was: closed by the node, or nothing new for a second.
      for (let i = 0, quiet = 0, seen = -1; i < 300 && quiet < 10 && stalls.some((s) => !s.client.closed); i++) {
        await sleep(100, signal)
        const now = stalls.reduce((a, s) => a + s.client.frames, 0)
        quiet = now === seen ? quiet + 1 : 0
        seen = now
      }
      for (const s of stalls) {
        s.settle()
        s.client.close()
      }
      await deleteSubscription(ctx, target, subId)
      subId = undefined
      rss.afterClose = await settledRss()
      ctx.log(`control 2: ${half} broadcasts, the stalled sockets gone; ${target.org}'s node RSS ${fmt(rss.afterClose)} MiB`)
      phase = 'control2'
      sent.control2 = await load('control2', half)
      phase = 'idle'
      rss.end = await settledRss()
    } finally {
      stop.abort()
      await Promise.all([statusLoop, sampleLoop])
      for (const s of stalls) s.client.close()
      if (subId !== undefined) await deleteSubscription(ctx, target, subId)
      await watcher.stop()
    }
    const benchCpu = cpu.stop()

    // Each phase's growth between the readings that bracket it (control 1's includes the stalled sockets' connecting).
    const growth = {
      control1: rss.beforeStalled - rss.start,
      stalled: rss.stalled - rss.beforeStalled,
      closing: rss.afterClose - rss.stalled,
      control2: rss.end - rss.afterClose,
    }
    const controls = growth.control1 + growth.control2
    const attributable = growth.stalled - controls
    const perMsg = (mib: number, n: number): string => `${fmt((mib * 1024) / Math.max(1, n), 2)} KiB per message`
    // A checkpoint's worker holds a copy of the database for a while: readings within a few seconds of one are left
    // out of the fits and the peak (/status shows a checkpoint a reading or two late).
    const nearCheckpoint = (x: RssSample): boolean => samples.some((c) => c.checkpointRunning && Math.abs(c.atMs - x.atMs) <= CHECKPOINT_MARGIN_MS)
    // RSS against messages confirmed inside each phase.
    const fit = (keep: (s: RssSample) => boolean): { kibPerMessage: number; points: number } => {
      const pts = samples.filter((s) => keep(s) && s.rssMiB !== null && !nearCheckpoint(s)).map((s) => ({ x: s.confirmed, y: s.rssMiB! }))
      return { kibPerMessage: slope(pts) * 1024, points: pts.length }
    }
    const fits = {
      control: fit((s) => s.phase === 'control1' || s.phase === 'control2'),
      stalled: fit((s) => s.phase === 'stalled'),
      stalledWhileOpen: fit((s) => s.phase === 'stalled' && s.stalledOpen),
    }
    const peak = (keep: (s: RssSample) => boolean): number =>
      samples.filter((s) => keep(s) && s.rssMiB !== null && !nearCheckpoint(s)).reduce((a, s) => Math.max(a, s.rssMiB!), -Infinity)
    const peakWhileOpen = peak((s) => s.phase === 'stalled' && s.stalledOpen)
    const checkpointSamples = samples.filter(nearCheckpoint).length

    ctx.log(`${target.org}'s node RSS, MiB (between phases: the median of five readings with no checkpoint running):`)
    ctx.log(`  control 1: ${fmt(rss.start)} -> ${fmt(rss.beforeStalled)} (${signed(growth.control1)} over ${sent.control1} messages, ${perMsg(growth.control1, sent.control1)}; the stalled sockets connected just before the second reading)`)
    ctx.log(`  stalled:   ${fmt(rss.beforeStalled)} -> ${fmt(rss.stalled)} (${signed(growth.stalled)} over ${sent.stalled} messages, ${perMsg(growth.stalled, sent.stalled)}; peak of the 1 s readings while both stalled sockets were open, none near a checkpoint, ${fmt(peakWhileOpen)})`)
    ctx.log(`  the stalled sockets read again and closed: ${fmt(rss.stalled)} -> ${fmt(rss.afterClose)} (${signed(growth.closing)})`)
    ctx.log(`  control 2: ${fmt(rss.afterClose)} -> ${fmt(rss.end)} (${signed(growth.control2)} over ${sent.control2} messages, ${perMsg(growth.control2, sent.control2)})`)
    ctx.log(`  growth attributable to the stalled clients (stalled phase less both controls, as many messages): ${signed(attributable)} MiB; the two controls differ by ${fmt(Math.abs(growth.control1 - growth.control2))} MiB, RSS's own spread between like phases`)
    ctx.log(
      `  fitted over the 1 s readings (none near a checkpoint): controls ${fmt(fits.control.kibPerMessage, 2)} KiB per message (${fits.control.points} readings), stalled ${fmt(fits.stalled.kibPerMessage, 2)} (${fits.stalled.points}), while both stalled sockets were open ${fmt(fits.stalledWhileOpen.kibPerMessage, 2)} (${fits.stalledWhileOpen.points}); ${checkpointSamples} readings left out near a checkpoint`,
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
      kibAfterResuming: round(s.bytesAfterResume / 1024, 0),
    })
    return {
      member: target.org,
      stalledMessages: sent.stalled,
      controlMessages: sent.control1 + sent.control2,
      readAhead: READ_AHEAD,
      stalledSeconds: round(stalledSeconds, 1),
      rssMiB: Object.fromEntries(Object.entries(rss).map(([k, v]) => [k, round(v, 1)])),
      growthMiB: Object.fromEntries(Object.entries(growth).map(([k, v]) => [k, round(v, 1)])),
      attributableMiB: round(attributable, 1),
      controlsDifferByMiB: round(Math.abs(growth.control1 - growth.control2), 1),
      peakRssWhileStalledMiB: round(peakWhileOpen, 1),
      kibPerMessage: Object.fromEntries(Object.entries(fits).map(([k, v]) => [k, round(v.kibPerMessage, 2)])),
      durable: stalls[0] ? stallJson(stalls[0]) : null,
      ephemeral: stalls[1] ? stallJson(stalls[1]) : null,
      benchCpuPct: round(benchCpu.pctOfCore),
    }
  },
}
