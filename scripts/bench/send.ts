/** Sending broadcasts (or anything answering like one) the way every run of the benchmark does: same bodies, same client. */
import { postJson, sleep } from './http.js'
import { maxOf } from './stats.js'
import type { BenchContext, Json } from './types.js'

/** Most POSTs in flight during the paced run, so a stalled node cannot pile up unbounded requests. */
export const PACED_MAX_IN_FLIGHT = 500

export interface Sent {
  id: string
  /** When the 202 arrived at this client, ms since the epoch. */
  acceptedMs: number
}

export interface SendRun {
  sent: Sent[]
  firstSendMs: number
  failures: number
  failureSamples: string[]
}

/** The body of the i-th POST of a phase. */
export type BodyMaker = (phase: string, i: number) => Json

export function broadcastBody(phase: string, i: number): Json {
  return { header: { tag: `bench-${phase}` }, data: [{ value: { phase, i, note: 'parley bench', at: Date.now() } }] }
}

async function sendOne(url: string, phase: string, i: number, run: SendRun, makeBody: BodyMaker): Promise<void> {
  try {
    const res = await postJson(url, makeBody(phase, i))
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
export async function sendConcurrent(url: string, phase: string, count: number, concurrency: number, signal: AbortSignal, makeBody: BodyMaker = broadcastBody): Promise<SendRun> {
  const run: SendRun = { sent: [], firstSendMs: Date.now(), failures: 0, failureSamples: [] }
  let next = 0
  const worker = async (): Promise<void> => {
    while (!signal.aborted && next < count) await sendOne(url, phase, next++, run, makeBody)
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker))
  return run
}

/** `count` POSTs started at a steady `rate` per second (each on schedule, not waiting for the previous answer). */
export async function sendPaced(url: string, phase: string, count: number, rate: number, signal: AbortSignal, makeBody: BodyMaker = broadcastBody): Promise<SendRun> {
  const run: SendRun = { sent: [], firstSendMs: Date.now(), failures: 0, failureSamples: [] }
  const inFlight = new Set<Promise<void>>()
  const t0 = Date.now()
  for (let i = 0; i < count && !signal.aborted; i++) {
    await sleep(t0 + (i * 1000) / rate - Date.now(), signal)
    while (inFlight.size >= PACED_MAX_IN_FLIGHT) await Promise.race(inFlight)
    const p: Promise<void> = sendOne(url, phase, i, run, makeBody).finally(() => inFlight.delete(p))
    inFlight.add(p)
  }
  await Promise.all(inFlight)
  return run
}

/** 202s per second from the first send to the last 202, and those seconds. */
export function acceptRate(run: SendRun): { perSec: number; seconds: number } {
  const seconds = (maxOf(run.sent.map((s) => s.acceptedMs)) - run.firstSendMs) / 1000
  return { perSec: run.sent.length / Math.max(1e-3, seconds), seconds }
}

export function reportFailures(ctx: BenchContext, what: string, run: SendRun): void {
  if (run.failures === 0) return
  ctx.log(`  !! ${run.failures} ${what} POSTs were not answered 202; first: ${run.failureSamples.join(' | ')}`)
}
