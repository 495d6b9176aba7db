import { readFileSync, statSync } from 'node:fs'
import fc from 'fast-check'
import { isAlive } from '../../../network/process.js'
import { FAMILIES, type Family } from './gen/families.js'
import type { Seeds } from './gen/seeds.js'
import { sendRaw, type Outcome, type Target } from './http-client.js'
import { describeRequest, type FuzzRequest } from './request.js'
import { classify, problemWith } from './verdict.js'
import { KNOWN_FAULTS, knownFault } from './known.js'

export interface CampaignOptions {
  target: Target
  seeds: Seeds
  seed: number
  /** Requests in all, shared among the families by weight (each family gets at least one). */
  runs: number
  /** A request without a complete answer by then is a hang. */
  requestTimeoutMs: number
  /** The node's PID: it must be alive after each family. */
  pid: number
  /** The node's log: a server error it logs is a failure even when no client saw it (the client had hung up). */
  logFile?: string
  /**
   * Wall-clock limit for the whole campaign: the family running when it passes stops there, later ones do not start,
   * and their rows say so. A campaign cut short is a failed one (see `unfinished`); the limit only turns a run that
   * would outlast its test's timeout into a failure that says how far it got.
   */
  timeBudgetMs?: number
  /** Only these families (all when absent). */
  only?: string[]
  log?: (line: string) => void
}

export interface Counts {
  requests: number
  '2xx': number
  '4xx': number
  '5xx': number
  hang: number
  dropped: number
  other: number
  seconds: number
  /** The requests it was to send: its share of the runs (for the total, the sum of the shares). */
  planned: number
  /** Fewer requests than planned: the time budget ran out. */
  interrupted: boolean
}

export interface Failure {
  family: string
  request: string
  problem: string
}

export interface CampaignResult {
  seed: number
  byFamily: Map<string, Counts>
  total: Counts
  /** Bad answers not explained by a known fault: any fails the run. */
  failures: Failure[]
  /** Bad answers from faults known and reported elsewhere (known.ts), by fault id, with one example each. */
  known: Map<string, { n: number; example: Failure }>
  /** The error codes of the 4xx answers, by family: shows how deep each generator reaches. */
  codes: Map<string, Map<string, number>>
}

const zero = (planned = 0): Counts => ({ requests: 0, '2xx': 0, '4xx': 0, '5xx': 0, hang: 0, dropped: 0, other: 0, seconds: 0, planned, interrupted: false })

/** How many of `runs` each family gets. */
export function runsPerFamily(runs: number, families: Family[] = FAMILIES): Map<string, number> {
  const weights = families.reduce((s, f) => s + f.weight, 0)
  return new Map(families.map((f) => [f.name, Math.max(1, Math.round((runs * f.weight) / weights))]))
}

/**
 * Runs each family as one fast-check property against a live node: every generated request is sent, its answer
 * judged (verdict.ts) and counted. A bad answer is recorded rather than stopping the run, so one run lists every
 * kind of fault; after each family the node must still answer /status, be alive, and have logged no server error.
 */
export async function runCampaign(opts: CampaignOptions): Promise<CampaignResult> {
  const families = opts.only ? FAMILIES.filter((f) => opts.only!.includes(f.name)) : FAMILIES
  const share = runsPerFamily(opts.runs, families)
  const deadline = opts.timeBudgetMs !== undefined ? Date.now() + opts.timeBudgetMs : undefined
  const byFamily = new Map<string, Counts>()
  const failures: Failure[] = []
  const known = new Map<string, { n: number; example: Failure }>()
  const codes = new Map<string, Map<string, number>>()
  for (const family of families) {
    const counts = zero(share.get(family.name)!)
    byFamily.set(family.name, counts)
    const left = deadline === undefined ? undefined : deadline - Date.now()
    if (left !== undefined && left <= 0) {
      counts.interrupted = true
      continue
    }
    const familyCodes = new Map<string, number>()
    codes.set(family.name, familyCodes)
    const logFrom = opts.logFile ? statSync(opts.logFile).size : 0
    const t0 = Date.now()
    await fc.assert(
      fc.asyncProperty(family.arb(opts.seeds), async (req: FuzzRequest) => {
        const outcome = await sendRaw(opts.target, req, opts.requestTimeoutMs)
        counts.requests++
        counts[classify(outcome)]++
        const code = errorCode(req, outcome)
        if (code) familyCodes.set(code, (familyCodes.get(code) ?? 0) + 1)
        const problem = problemWith(req, outcome)
        if (!problem) return
        const failure = { family: family.name, request: describeRequest(req), problem }
        const k = knownFault(req, problem)
        if (!k) failures.push(failure)
        else known.set(k.id, { n: (known.get(k.id)?.n ?? 0) + 1, example: known.get(k.id)?.example ?? failure })
      }),
      {
        seed: opts.seed,
        numRuns: share.get(family.name)!,
        // The property records bad answers rather than failing: a throw is the fuzzer's own bug, shown unshrunk.
        endOnFailure: true,
        // Not marked as a failure here, so that the rows are still counted and printed; `unfinished` fails the run.
        ...(left !== undefined ? { interruptAfterTimeLimit: left, markInterruptAsFailure: false } : {}),
      },
    )
    counts.seconds = (Date.now() - t0) / 1000
    counts.interrupted = counts.requests < counts.planned
    for (const problem of await healthProblems(opts, logFrom)) failures.push({ family: family.name, request: '(after the family)', problem })
    opts.log?.(`  ${family.name.padEnd(12)} ${formatCounts(counts)}`)
  }
  const total = zero()
  for (const c of byFamily.values()) {
    for (const k of ['requests', '2xx', '4xx', '5xx', 'hang', 'dropped', 'other', 'seconds', 'planned'] as const) total[k] += c[k]
    total.interrupted ||= c.interrupted
  }
  return { seed: opts.seed, byFamily, total, failures, known, codes }
}

/** The requests planned in all for `runs`: the families' shares, each rounded (so not always `runs` exactly). */
export function plannedRequests(runs: number, only?: string[]): number {
  const families = only ? FAMILIES.filter((f) => only.includes(f.name)) : FAMILIES
  return [...runsPerFamily(runs, families).values()].reduce((a, b) => a + b, 0)
}

/**
 * Why the campaign did not run every planned request (the time budget ran out), naming how many ran of each
 * family; undefined when all ran. A campaign that stops early has not checked what it claims to.
 */
export function unfinished(r: CampaignResult, budgetMs?: number): string | undefined {
  if (!r.total.interrupted && r.total.requests === r.total.planned) return undefined
  const rows = [...r.byFamily.entries()].filter(([, c]) => c.requests < c.planned).map(([name, c]) => `${name} ${c.requests} of ${c.planned}`)
  const budget = budgetMs !== undefined ? ` within the ${budgetMs / 1000} s budget` : ''
  return `ran ${r.total.requests} of ${r.total.planned} planned requests${budget} (short: ${rows.join(', ')})`
}

/** `status CODE` of a JSON error answer, e.g. `400 INVALID_FIELD`. */
function errorCode(req: FuzzRequest, o: Outcome): string | undefined {
  if (o.kind !== 'answered' || o.status < 400) return undefined
  if (req.method === 'HEAD') return `${o.status} (HEAD)`
  try {
    const error = (JSON.parse(o.body.toString('utf8')) as { error?: unknown }).error
    return `${o.status} ${typeof error === 'string' ? error.split(':')[0] : '?'}`
  } catch {
    return `${o.status} (no JSON)`
  }
}

/** The node is alive, answers /status 200, and logged no server error while the family ran. */
async function healthProblems(opts: CampaignOptions, logFrom: number): Promise<string[]> {
  const out: string[] = []
  if (!isAlive(opts.pid)) return [`the node (pid ${opts.pid}) is no longer running`]
  const status = await sendRaw(opts.target, { family: 'health', method: 'GET', target: '/api/v1/status', headers: [], body: new Uint8Array(0) }, opts.requestTimeoutMs)
  if (status.kind !== 'answered' || status.status !== 200) out.push(`/api/v1/status did not answer 200 afterwards (${status.kind === 'answered' ? status.status : status.kind})`)
  if (opts.logFile) {
    const added = readFileSync(opts.logFile).subarray(logFrom).toString('utf8')
    for (const line of added.split('\n').filter((l) => /\bapi: .* failed: /.test(l))) out.push(`the node logged a server error: ${line.trim().slice(0, 400)}`)
  }
  return out
}

export function formatCounts(c: Counts): string {
  const cut = c.interrupted ? `  (time budget spent: ${c.requests} of ${c.planned} ran)` : ''
  return `requests ${String(c.requests).padStart(6)}  2xx ${String(c['2xx']).padStart(5)}  4xx ${String(c['4xx']).padStart(6)}  5xx ${String(c['5xx']).padStart(3)}  hangs ${String(c.hang).padStart(3)}  dropped ${String(c.dropped).padStart(3)}  other ${String(c.other).padStart(2)}  ${c.seconds.toFixed(1).padStart(6)} s${cut}`
}

/** The counts as a table, one row per family and the total. */
export function countsTable(r: CampaignResult): string {
  const rows = [...r.byFamily.entries()].map(([name, c]) => `  ${name.padEnd(12)} ${formatCounts(c)}`)
  return [`fuzz seed ${r.seed}, ${r.total.planned} requests planned`, ...rows, `  ${'total'.padEnd(12)} ${formatCounts(r.total)}`].join('\n')
}

/** Which known faults (known.ts) this run met, and which it did not (fixed, or not reached by this seed). */
export function knownReport(r: CampaignResult): string {
  return KNOWN_FAULTS.map((k) => {
    const seen = r.known.get(k.id)
    return seen
      ? `  known fault ${k.id} (${k.owner}), seen ${seen.n}×, not failing the run: ${k.what}\n    e.g. ${seen.example.request}`
      : `  known fault ${k.id} (${k.owner}) not seen in this run: if it is fixed, remove it from test/support/fuzz/known.ts`
  }).join('\n')
}

/** The 4xx error codes each family drew, most frequent first. */
export function codesReport(r: CampaignResult): string {
  return [...r.codes.entries()]
    .map(([family, m]) => `  ${family.padEnd(12)} ${[...m.entries()].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c} ×${n}`).join(', ')}`)
    .join('\n')
}

/** The failures, grouped by what went wrong (the same fault found by many requests is shown once, with one example). */
export function failureReport(failures: Failure[], maxKinds = 25): string {
  const kinds = new Map<string, { first: Failure; n: number }>()
  for (const f of failures) {
    const key = `${f.family}: ${signature(f.problem)}`
    const k = kinds.get(key)
    if (k) k.n++
    else kinds.set(key, { first: f, n: 1 })
  }
  const lines = [...kinds.values()].slice(0, maxKinds).map(({ first, n }) => `- ${first.problem}  (×${n})\n    ${first.request}`)
  if (kinds.size > maxKinds) lines.push(`… and ${kinds.size - maxKinds} more kinds`)
  return lines.join('\n')
}

/** A problem with what varies between requests showing one fault (times, ids, namespaces, numbers) taken out. */
function signature(problem: string): string {
  return problem
    .replace(/\d{4}-\d{2}-\d{2}T[\d:.]+Z/g, '<time>')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<id>')
    .replace(/\/namespaces\/[^/ ]+/g, '/namespaces/<ns>')
    .replace(/\d+/g, '#')
    .slice(0, 160)
}
