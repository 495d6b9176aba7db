import { expect } from 'chai'
import type { MemberDescription } from '../../network/description.js'
import { suiteNetwork } from '../support/network.js'
import { runId } from '../support/api.js'
import { countsTable, failureReport, knownReport, runCampaign } from '../support/fuzz/campaign.js'
import { plantSeeds, type Seeds } from '../support/fuzz/gen/seeds.js'
import { DEFAULT_RUNS, DEFAULT_SEED, REQUEST_TIMEOUT_MS, TEST_TIME_BUDGET_MS, envInt } from '../support/fuzz/settings.js'
import { FAMILIES } from '../support/fuzz/gen/families.js'

/**
 * DESIGN section 7, "bad input", as a property: whatever a client sends to any route — method, path, query, headers,
 * body — the answer is a 2xx or a 4xx with the JSON error body, within the time limit, and the node lives on.
 */
describe('API fuzz: every request gets a 2xx or a JSON 4xx, never a 5xx, a hang or a crash', function () {
  this.timeout(180_000)
  const t = suiteNetwork('fuzz', { members: 1 })
  const seed = envInt('FUZZ_SEED', DEFAULT_SEED)
  const runs = envInt('FUZZ_RUNS', DEFAULT_RUNS)
  let m: MemberDescription
  let seeds: Seeds

  before(async () => {
    m = t.members[0]!
    seeds = await plantSeeds(m, `fuzz-${runId()}`)
  })

  it(`${FAMILIES.length} generator families, ${runs} requests, seed ${seed}`, async () => {
    const url = new URL(m.api)
    const node = t.net.processes.find((p) => p.name === m.node)!
    const result = await runCampaign({
      target: { host: url.hostname, port: Number(url.port) },
      seeds,
      seed,
      runs,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      // Only for the default count: a count asked for by FUZZ_RUNS is run whole.
      ...(process.env.FUZZ_RUNS ? {} : { timeBudgetMs: TEST_TIME_BUDGET_MS }),
      pid: node.pid,
      logFile: node.logFile,
    })
    // Printed whether it passes or not: the seed reproduces the run, the counts say what it covered.
    console.log(`${countsTable(result)}\n${knownReport(result)}\n  (FUZZ_SEED and FUZZ_RUNS change the seed and the count)`)
    expect(result.total.requests, 'every family ran').to.be.greaterThanOrEqual(FAMILIES.length)
    expect(result.failures.length, `bad answers:\n${failureReport(result.failures)}\n`).to.equal(0)
  })
})
