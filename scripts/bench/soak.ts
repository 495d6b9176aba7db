import { readPids, type MemberDescription } from '../../network/description.js'
import { layout } from '../../network/layout.js'
import { explainMissing, waitAll } from './broadcast.js'
import { fmtCpu, rssMiB, startCpu } from './cpu.js'
import { get, postJson, sleep } from './http.js'
import { round, slope } from './stats.js'
import { throwIfAborted, type BenchContext, type Json, type Scenario } from './types.js'
import { ConfirmationWatcher } from './watch.js'

const NAMESPACE = 'default'
const MiB = 1024 * 1024
const SAMPLE_EVERY_MS = 10_000
/** Samples in the first minute carry start-up (heap growth, JIT) more than the load, and are left out of the fits. */
const SETTLE_MS = 60_000
const MOST_IN_FLIGHT = 300
const DATATYPE = { name: 'soak-reading', version: '1' }

/** What one tick of the mixed load sends, by its index: mostly plain broadcasts, some checked, some uploaded first. */
type Kind = 'broadcast' | 'validated' | 'uploaded' | 'read'
function kindOf(i: number): Kind {
  if (i % 50 === 49) return 'uploaded'
  if (i % 20 === 19) return 'validated'
  if (i % 10 === 9) return 'read'
  return 'broadcast'
}

interface Sample {
  atMs: number
  /** Messages confirmed on each member so far, by org. */
  confirmed: Map<string, number>
  /** RSS of each process, MiB, by process name; null when it could not be read. */
  rssMiB: Map<string, number | null>
}

interface Tally {
  sent: string[]
  failures: number
  failureSamples: string[]
  reads: number
  /** The slowest answer to a read or a /status, ms: a member frozen by one request shows here. */
  slowestReadMs: number
  /** The slowest few, with when and where, to line up with the members' logs. */
  slowest: { ms: number; atMs: number; org: string; what: string }[]
}

function noteRead(t: Tally, ms: number, org: string, what: string): void {
  t.slowestReadMs = Math.max(t.slowestReadMs, ms)
  t.slowest.push({ ms, atMs: Date.now(), org, what })
  t.slowest.sort((a, b) => b.ms - a.ms)
  t.slowest.length = Math.min(t.slowest.length, 5)
}

function processesOf(ctx: BenchContext): { name: string; pid: number }[] {
  try {
    return readPids(layout(ctx.dir).pidsJson).processes
  } catch {
    return ctx.processes
  }
}

async function sendOne(ctx: BenchContext, from: MemberDescription, i: number, t: Tally): Promise<void> {
  const base = `${from.api}/api/v1/namespaces/${NAMESPACE}`
  const kind = kindOf(i)
  const fail = (what: string): void => {
    t.failures++
    if (t.failureSamples.length < 5) t.failureSamples.push(what)
  }
  try {
    if (kind === 'read') {
      const t0 = Date.now()
      const r = await get(`${base}/messages?limit=25&descending`)
      noteRead(t, Date.now() - t0, from.org, 'GET messages')
      t.reads++
      if (r.status !== 200) fail(`read ${r.status} ${r.text.slice(0, 200)}`)
      return
    }
    let data: Json[]
    if (kind === 'uploaded') {
      const up = await postJson(`${base}/data`, { value: { uploaded: i, filler: 'u'.repeat(512) } })
      if (up.status !== 200 && up.status !== 201) return fail(`upload ${up.status} ${up.text.slice(0, 200)}`)
      data = [{ id: (JSON.parse(up.text) as { id: string }).id }]
    } else if (kind === 'validated') {
      data = [{ datatype: DATATYPE, validator: 'json', value: { sensor: `s${i % 17}`, reading: i, ok: true } }]
    } else {
      data = [{ value: { soak: i, at: Date.now(), note: 'parley soak' } }]
    }
    const res = await postJson(`${base}/messages/broadcast`, { header: { tag: `soak-${kind}`, topics: [`soak-${i % 8}`] }, data })
    if (res.status !== 202) return fail(`${kind} ${res.status} ${res.text.slice(0, 200)}`)
    t.sent.push((JSON.parse(res.text) as { header: { id: string } }).header.id)
  } catch (err) {
    fail(`${kind}: ${err instanceof Error ? err.message : String(err)}`)
  }
}

/**
 * A member left running under a steady mixed load for `--minutes`: broadcasts from every member in turn, one in
 * twenty checked against a datatype, one in fifty sent as uploaded data, reads between them. Every ten seconds it
 * reads each process's RSS; fitted over the samples after the first minute, the slope per 100,000 messages says
 * whether memory grows with the messages (a leak, or data held in memory) or stays flat.
 */
export const soakScenario: Scenario = {
  name: 'soak',
  describe: 'a steady mixed load for --minutes: each process’s RSS sampled, its slope per 100,000 messages fitted',
  optIn: true,
  async run(ctx) {
    const { options: o, members, signal } = ctx
    const watchers = members.map((m) => new ConfirmationWatcher(m.org, m.api, NAMESPACE))
    for (const w of watchers) w.start(o.timeoutSeconds * 1000, signal)
    const cpu = startCpu()
    const tally: Tally = { sent: [], failures: 0, failureSamples: [], reads: 0, slowestReadMs: 0, slowest: [] }
    const samples: Sample[] = []

    const definer = members[0]!
    const def = await postJson(`${definer.api}/api/v1/namespaces/${NAMESPACE}/datatypes?confirm=true`, {
      ...DATATYPE,
      value: { type: 'object', properties: { sensor: { type: 'string', pattern: '^s[0-9]+$' }, reading: { type: 'integer' }, ok: { type: 'boolean' } }, required: ['sensor', 'reading'] },
    })
    if (def.status !== 200 && def.status !== 409) throw new Error(`defining the soak datatype: ${def.status} ${def.text.slice(0, 200)}`)
    // Every member must know the datatype before a checked value reaches it.
    await sleep(2000, signal)

    const sample = (): Sample => ({
      atMs: Date.now(),
      confirmed: new Map(watchers.map((w) => [w.org, w.count])),
      rssMiB: new Map(processesOf(ctx).map((p) => [p.name, rssMiB(p.pid)])),
    })
    const t0 = Date.now()
    const endMs = t0 + o.soakMinutes * 60_000
    ctx.log(`soak: ${o.soakRate} requests/s for ${o.soakMinutes} min, from ${members.map((m) => m.org).join(', ')} in turn`)
    samples.push(sample())
    const sampler = (async () => {
      while (!signal.aborted && Date.now() < endMs) {
        await sleep(SAMPLE_EVERY_MS, signal)
        const s = sample()
        samples.push(s)
        await Promise.all(
          members.map(async (m) => {
            const a = Date.now()
            await get(`${m.api}/api/v1/status`).catch(() => undefined)
            noteRead(tally, Date.now() - a, m.org, 'GET status')
          }),
        )
        ctx.log(
          `  ${((s.atMs - t0) / 60_000).toFixed(1)} min: ${tally.sent.length} accepted, confirmed ${[...s.confirmed].map(([org, n]) => `${org} ${n}`).join(', ')} | RSS ${[...s.rssMiB].map(([n, r]) => `${n} ${r === null ? '?' : r.toFixed(0)}`).join(', ')} MiB`,
        )
      }
    })()

    const inFlight = new Set<Promise<void>>()
    for (let i = 0; Date.now() < endMs && !signal.aborted; i++) {
      await sleep(t0 + (i * 1000) / o.soakRate - Date.now(), signal)
      while (inFlight.size >= MOST_IN_FLIGHT) await Promise.race(inFlight)
      const p: Promise<void> = sendOne(ctx, members[i % members.length]!, i, tally).finally(() => inFlight.delete(p))
      inFlight.add(p)
    }
    await Promise.all(inFlight)
    await sampler
    throwIfAborted(signal)
    const missing = await waitAll(ctx, watchers, tally.sent, 120_000)
    for (const w of watchers) await explainMissing(ctx, members.find((m) => m.org === w.org)!, missing.get(w.org) ?? [])
    samples.push(sample())
    await Promise.all(watchers.map((w) => w.stop()))
    const benchCpu = cpu.stop()

    // x: messages the process has had to do with. A member's own confirmed count; the chain and IPFS serve all.
    const settled = samples.filter((s) => s.atMs - t0 >= SETTLE_MS)
    const slopes: { [name: string]: Json } = {}
    const names = [...new Set(samples.flatMap((s) => [...s.rssMiB.keys()]))]
    for (const name of names) {
      const member = members.find((m) => m.node === name)
      const points = settled.flatMap((s) => {
        const y = s.rssMiB.get(name)
        const x = member ? s.confirmed.get(member.org) : Math.max(...s.confirmed.values())
        return y === null || y === undefined || x === undefined ? [] : [{ x, y }]
      })
      const perMessage = points.length >= 3 ? slope(points) : NaN
      slopes[name] = Number.isFinite(perMessage) ? round(perMessage * 100_000, 1) : null
      const last = samples.at(-1)?.rssMiB.get(name)
      ctx.log(
        `  ${name}: RSS ${Number.isFinite(perMessage) ? `${perMessage >= 0 ? '+' : ''}${(perMessage * 100_000).toFixed(1)}` : '?'} MiB per 100,000 messages (fitted over ${points.length} samples after the first minute), now ${last === null || last === undefined ? '?' : last.toFixed(0)} MiB`,
      )
    }
    const seconds = (Date.now() - t0) / 1000
    ctx.log(`  ${tally.sent.length} messages accepted (${(tally.sent.length / seconds).toFixed(0)}/s), ${tally.reads} reads, ${tally.failures} failures${tally.failures > 0 ? `; first: ${tally.failureSamples.join(' | ')}` : ''}`)
    ctx.log(`  slowest answers to a read or /status: ${tally.slowest.map((r) => `${r.ms} ms (${r.what} at ${r.org}, ${((r.atMs - t0) / 60_000).toFixed(2)} min)`).join(', ')}`)
    ctx.log(`  bench process CPU over the run: ${fmtCpu(benchCpu)}`)
    return {
      minutes: o.soakMinutes,
      rate: o.soakRate,
      messages: tally.sent.length,
      reads: tally.reads,
      failures: tally.failures,
      unconfirmed: Object.fromEntries([...missing].map(([org, ids]) => [org, ids.length])),
      rssMiBPer100kMessages: slopes,
      slowestReadMs: tally.slowestReadMs,
      benchCpuPct: round(benchCpu.pctOfCore),
    }
  },
}
