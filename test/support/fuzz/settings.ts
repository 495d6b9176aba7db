/**
 * The fuzz run's size and seed. `npm test` runs a fixed seed and a count small enough for the suite (every planned
 * request must run, or the test fails), so a failure there reproduces; FUZZ_SEED and FUZZ_RUNS change them (e.g.
 * `FUZZ_SEED=7 FUZZ_RUNS=5000 npx mocha test/fuzz`), and `npm run fuzz -- --seed N --runs N` takes the same values.
 */
export const DEFAULT_SEED = 20_240_614
/** Requests in all, shared among the families by weight: about 10 s of requests on a quiet 2-core machine. */
export const DEFAULT_RUNS = 2000
/**
 * Beyond this the default campaign stops and fails, saying how many requests ran: on a machine too loaded to finish
 * it, the test fails with the counts rather than at mocha's timeout with none. A count asked for by FUZZ_RUNS has
 * no limit.
 */
export const TEST_TIME_BUDGET_MS = 120_000
export const REQUEST_TIMEOUT_MS = 10_000

export function envInt(name: string, dflt: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return dflt
  const n = Number(raw)
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a whole number: ${JSON.stringify(raw)}`)
  return n
}
