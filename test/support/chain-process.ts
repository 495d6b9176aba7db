import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, signalPid, spawnLogged, stopPid, type SpawnedProcess } from '../../network/process.js'
import { programArgs } from './programs.js'
import { Broken, waitUntil } from './wait.js'
import { BATCH_PIN_ARTIFACT, deployBatchPin, fundAccounts } from '../../network/chain/deploy.js'

/** A real chain process (network/chain/main.ts) for tests, on a free port with a temporary state folder. */
export interface TestChain {
  dir: string
  port: number
  rpc: string
  proc: SpawnedProcess
  logFile: string
  /** What the process logged since this start. */
  output(): string
  /** SIGTERM (SIGKILL after a grace period). */
  stop(): Promise<void>
  /** SIGKILL: no chance to tidy up, as in a crash. */
  kill(): Promise<void>
}

const running = new Set<number>()
const dirs = new Set<string>()

export function assertCompiled(): void {
  if (!existsSync(BATCH_PIN_ARTIFACT)) throw new Error(`${BATCH_PIN_ARTIFACT} is missing: run \`npx hardhat compile\` first`)
}

export function tempDir(prefix = 'parley-chain-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  dirs.add(dir)
  return dir
}

/** Starts the chain and resolves once it printed its ready line; `dir`/`port` given again resume a chain. */
export async function startChain(opts: { dir?: string; port?: number } = {}): Promise<TestChain> {
  const dir = opts.dir ?? tempDir()
  const port = opts.port ?? (await freePort())
  const logFile = join(dir, 'chain.log')
  const offset = existsSync(logFile) ? statSync(logFile).size : 0
  const output = (): string => (existsSync(logFile) ? readFileSync(logFile).subarray(offset).toString('utf8') : '')
  const proc = spawnLogged({
    name: 'chain',
    command: process.execPath,
    args: await programArgs('chain', ['--dir', dir, '--port', String(port)]),
    logFile,
  })
  running.add(proc.pid)
  let exited: number | null | undefined
  void proc.exited.then((code) => {
    exited = code
    running.delete(proc.pid)
  })
  const rpc = `http://127.0.0.1:${port}`
  await waitUntil('the chain to be ready', () => {
    if (exited !== undefined) throw new Broken(`chain exited with ${exited}: ${output()}`)
    return output().includes(`chain ready rpc=${rpc} `)
  }, { timeoutMs: 60_000, intervalMs: 50 })
  return {
    dir,
    port,
    rpc,
    proc,
    logFile,
    output,
    stop: () => stopPid(proc.pid),
    kill: async () => {
      signalPid(proc.pid, 'SIGKILL')
      await proc.exited
    },
  }
}

/** For `after()`: stops every chain process a test started, by PID, whatever the tests did; removes temp dirs. */
/** A fresh chain with BatchPin deployed and `accounts` funded (10 ETH each): the start of most seam tests. */
export async function startDeployedChain(accounts: string[]): Promise<{ chain: TestChain; contract: string; firstBlock: number }> {
  assertCompiled()
  const chain = await startChain()
  const deployed = await deployBatchPin(chain.rpc)
  await fundAccounts(chain.rpc, accounts, '10')
  return { chain, contract: deployed.address, firstBlock: deployed.block }
}

export async function stopAllChains(): Promise<void> {
  await Promise.all([...running].map((pid) => stopPid(pid)))
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  dirs.clear()
}
