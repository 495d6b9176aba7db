/**
 * Mocha's hooks for the whole run (.mocharc.json requires this module in mocha's main process and in each of its
 * parallel workers):
 * - one folder per run (`runFolder()`), made by the main process and inherited by its workers, where the workers
 *   record how long each test file took and which shared networks they started (test/support/shared-network.ts);
 * - at the end of the run, every shared network is stopped by PID, and the run fails if any of their processes
 *   outlived the stop; the reporter (test/support/reporter.cjs) prints the slowest files.
 *
 * Per-file times: in parallel mode mocha runs each file as a run of its own inside a worker, so the root hooks
 * below run once per file and time it whole, its suites' before and after hooks (a network's start and stop)
 * included. In serial mode they run once for the whole run, and the reporter times files from its own events.
 */
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'mocha'
import { sharedNetworksRegistry } from './shared-network-registry.js'
import { stopRunPostgres } from './postgres-stop.js'

const RUN_ENV = 'PARLEY_TEST_RUN'

/**
 * The run's folder. A worker inherits its main process's; a main process makes its own even when one is inherited
 * (a test that runs mocha again, as the package test does, gets a run of its own).
 */
export function runFolder(): string {
  const inherited = process.env[RUN_ENV]
  if (inherited !== undefined && process.env.MOCHA_WORKER_ID !== undefined) return inherited
  if (ownFolder === undefined) {
    ownFolder = mkdtempSync(join(tmpdir(), 'parley-test-run-'))
    process.env[RUN_ENV] = ownFolder
  }
  return ownFolder
}
let ownFolder: string | undefined

/** One line per file a worker ran: `{file, ms, startedAt, worker}` (read by test/support/reporter.cjs). */
export const fileTimesPath = (): string => join(runFolder(), 'file-times.jsonl')

// Made now, in the main process, so that the workers it forks later inherit it.
if (process.env.MOCHA_WORKER_ID === undefined) runFolder()

let fileStarted = 0

export const mochaHooks = {
  beforeAll(this: Context): void {
    fileStarted = Date.now()
  },
  afterAll(this: Context): void {
    if (process.env.MOCHA_WORKER_ID === undefined) return
    const file = fileOf(this)
    if (file === undefined) return
    mkdirSync(runFolder(), { recursive: true })
    const line = { file, ms: Date.now() - fileStarted, startedAt: fileStarted, worker: Number(process.env.MOCHA_WORKER_ID) }
    appendFileSync(fileTimesPath(), `${JSON.stringify(line)}\n`)
  },
}

function fileOf(ctx: Context): string | undefined {
  const root = ctx.test?.parent
  return root?.suites.find((s) => s.file)?.file ?? root?.tests.find((t) => t.file)?.file
}

/**
 * Stops the run's shared networks, if any process started one: the module that does, with the network's whole
 * start-up code, is loaded only then (each mocha process loads this one, ~1.5 s of CPU sooner for nothing). It is
 * required, not imported: mocha loads the tests through tsx's CommonJS hook, and an `import()` here would compile
 * a second, ES-module copy of every module it reaches, whose source map replaces the tests' copy's in Node's cache,
 * so that `npm run coverage` mapped what the tests ran of those modules through the wrong map.
 */
async function stopSharedNetworks(folder: string): Promise<number[]> {
  if (!existsSync(sharedNetworksRegistry(folder))) return []
  const shared = createRequire(import.meta.url)('./shared-network.js') as typeof import('./shared-network.js')
  return shared.stopSharedNetworks(folder)
}

export async function mochaGlobalTeardown(): Promise<void> {
  const folder = runFolder()
  try {
    const alive = await stopSharedNetworks(folder)
    if (alive.length > 0) throw new Error(`processes of shared test networks left alive after their stop: ${alive.join(', ')}`)
  } finally {
    await stopRunPostgres(folder)
    rmSync(folder, { recursive: true, force: true })
  }
}
