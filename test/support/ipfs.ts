import { createCipheriv, createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, isAlive, processMemory, spawnLogged, stopPid, type SpawnedProcess } from '../../network/process.js'
import { programArgs } from './programs.js'
import { Broken, waitUntil } from './wait.js'
export { sleep } from '../../network/process.js'
export { collect } from './streams.js'

export interface IpfsProcess {
  proc: SpawnedProcess
  dir: string
  apiPort: number
  gatewayPort: number
  api: string
  gateway: string
  logFile: string
}

let starts = 0

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `parley-${prefix}-`))
}

/**
 * Removes the suite's state folders once it passed; after a failure they stay (logs and blocks) for a post-mortem.
 * Call from `after()` with its `this`, after the processes were stopped.
 */
export function removeIfPassed(ctx: Mocha.Context, dirs: string[]): void {
  const tests = ctx.test?.parent?.tests ?? []
  // "Some passed, none failed": tests filtered out by --grep do not count; a failed before() (no test ran) keeps all.
  if (tests.some((t) => t.state === 'passed') && !tests.some((t) => t.state === 'failed')) {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  } else {
    console.log(`      kept for inspection: ${dirs.join(', ')}`)
  }
}

export function readLog(logFile: string): string {
  try {
    return readFileSync(logFile, 'utf8')
  } catch {
    return ''
  }
}

/** Starts `network/ipfs/main.ts` as a real child process and waits for its ready line. */
export async function startIpfsProcess(dir: string, ports?: { api: number; gateway: number }): Promise<IpfsProcess> {
  const apiPort = ports?.api ?? (await freePort())
  const gatewayPort = ports?.gateway ?? (await freePort())
  // One log file per start, so a restart on the same ports is not mistaken for ready by the previous line.
  const logFile = join(dir, `ipfs-${process.pid}-${++starts}.log`)
  const proc = spawnLogged({
    name: 'ipfs',
    command: process.execPath,
    args: await programArgs('ipfs', ['--dir', dir, '--api-port', String(apiPort), '--gateway-port', String(gatewayPort)]),
    logFile,
  })
  let exitCode: number | null | undefined
  void proc.exited.then((code) => (exitCode = code))
  const api = `http://127.0.0.1:${apiPort}`
  const gateway = `http://127.0.0.1:${gatewayPort}`
  try {
    await waitUntil(
      'the ipfs ready line',
      () => {
        if (exitCode !== undefined) throw new Broken(`ipfs exited with ${exitCode}: ${readLog(logFile)}`)
        return readLog(logFile).includes(`ipfs ready api=${api} gateway=${gateway}`)
      },
      { timeoutMs: 20_000, intervalMs: 50 },
    )
  } catch (err) {
    await stopPid(proc.pid)
    throw err
  }
  return { proc, dir, apiPort, gatewayPort, api, gateway, logFile }
}

export async function stopIpfsProcess(p: IpfsProcess | undefined): Promise<void> {
  if (p && isAlive(p.proc.pid)) await stopPid(p.proc.pid)
}

/**
 * The bytes of Kubo's test helper `DeterministicRandomReader(size, seed)` (test/cli/testutils/random_deterministic.go):
 * the ChaCha20 keystream under key sha256(seed) and a zero nonce. Node's `chacha20` takes a 16-byte IV made of
 * the 32-bit block counter and the 96-bit nonce, all zero here; successive `update` calls continue the stream.
 * Generated 1 MiB at a time, never held whole.
 */
export async function* kuboDeterministicBytes(size: number, seed: string, hash?: ReturnType<typeof createHash>): AsyncGenerator<Uint8Array> {
  const cipher = createCipheriv('chacha20', createHash('sha256').update(seed).digest(), Buffer.alloc(16))
  const zeros = Buffer.alloc(1 << 20)
  for (let left = size; left > 0; ) {
    const n = Math.min(left, zeros.length)
    const chunk = cipher.update(zeros.subarray(0, n))
    hash?.update(chunk)
    left -= n
    yield chunk
  }
}

/** Drains a stream of bytes into a sha256 (hex) and a byte count, holding one chunk at a time. */
export async function sha256Of(source: AsyncIterable<Uint8Array>): Promise<{ sha256: string; bytes: number }> {
  const h = createHash('sha256')
  let bytes = 0
  for await (const chunk of source) {
    h.update(chunk)
    bytes += chunk.byteLength
  }
  return { sha256: h.digest('hex'), bytes }
}

/** A process's current and peak resident set (MiB), from /proc/<pid>/status (VmRSS, VmHWM). */
export function memoryOf(pid: number): { rssMiB: number; peakMiB: number } {
  const m = processMemory(pid)
  return { rssMiB: m.rss / 1024 / 1024, peakMiB: m.hwm / 1024 / 1024 }
}
