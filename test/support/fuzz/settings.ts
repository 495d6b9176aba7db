/**
 * The fuzz run's size and seed. `npm test` runs a fixed seed and a count that fits its time budget, so a failure
 * there reproduces; FUZZ_SEED and FUZZ_RUNS change them (e.g. `FUZZ_SEED=7 FUZZ_RUNS=5000 npx mocha test/fuzz`),
 * and `npm run fuzz -- --seed N --runs N` takes the same values.
 */
export const DEFAULT_SEED = 20_240_614
/** About 8 s on an idle 2-core machine; the time budget below bounds it on a loaded one. */
export const DEFAULT_RUNS = 6000
/** The requests' share of `npm test`'s ~90 s for this suite; the network's start and the seeds take the rest. */
export const TEST_TIME_BUDGET_MS = 60_000
export const REQUEST_TIMEOUT_MS = 10_000

export function envInt(name: string, dflt: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return dflt
  const n = Number(raw)
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a whole number: ${JSON.stringify(raw)}`)
  return n
}
