import { expect } from 'chai'
import type { MemberDescription } from '../../network/description.js'
import { suiteNetwork } from '../support/network.js'
import { runId } from '../support/api.js'
import { countsTable, failureReport, knownReport, plannedRequests, runCampaign, unfinished } from '../support/fuzz/campaign.js'
import { plantSeeds, type Seeds } from '../support/fuzz/gen/seeds.js'
import { DEFAULT_RUNS, DEFAULT_SEED, REQUEST_TIMEOUT_MS, TEST_TIME_BUDGET_MS, envInt } from '../support/fuzz/settings.js'
import { FAMILIES } from '../support/fuzz/gen/families.js'

/**
 * The API's rule for bad input (docs/api.md, Errors) as a property: whatever a client sends to any route — method, path, query, headers,
 * body — the answer is a 2xx or a 4xx with the JSON error body, within the time limit, and the node lives on.
 */
describe('API fuzz: every request gets a 2xx or a JSON 4xx, never a 5xx, a hang or a crash', function () {
  const asked = process.env.FUZZ_RUNS !== undefined && process.env.FUZZ_RUNS !== ''
  // The default campaign fails at its own time budget, well inside this; a count asked for runs whole.
  this.timeout(asked ? 0 : TEST_TIME_BUDGET_MS + 120_000)
  const t = suiteNetwork('fuzz', { members: 1 })
  const seed = envInt('FUZZ_SEED', DEFAULT_SEED)
  const runs = envInt('FUZZ_RUNS', DEFAULT_RUNS)
  const planned = plannedRequests(runs)
  let m: MemberDescription
  let seeds: Seeds

  before(async () => {
    m = t.members[0]!
    seeds = await plantSeeds(m, `fuzz-${runId()}`)
  })

  it(`${FAMILIES.length} generator families, ${planned} requests, seed ${seed}`, async () => {
    const url = new URL(m.api)
    const node = t.net.processes.find((p) => p.name === m.node)!
    const budget = asked ? undefined : TEST_TIME_BUDGET_MS
    const result = await runCampaign({
      target: { host: url.hostname, port: Number(url.port) },
      seeds,
      seed,
      runs,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      ...(budget !== undefined ? { timeBudgetMs: budget } : {}),
      pid: node.pid,
      logFile: node.logFile,
    })
    // Printed whether it passes or not: the seed reproduces the run, the counts say what it covered.
    console.log(`${countsTable(result)}\n${knownReport(result)}\n  (FUZZ_SEED and FUZZ_RUNS change the seed and the count)`)
    const short = unfinished(result, budget)
    if (short !== undefined) expect.fail(`not every planned request ran: ${short}`)
    expect(result.total.requests, 'requests sent').to.equal(planned)
    for (const [family, c] of result.byFamily) expect(c.requests, `${family}: requests sent`).to.equal(c.planned)
    expect(result.failures.length, `bad answers:\n${failureReport(result.failures)}\n`).to.equal(0)
  })
})
