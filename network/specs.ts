import { resolve } from 'node:path'
import type { Build, EntryName } from './build.js'
import type { Layout } from './layout.js'
import type { NodeConfigFile } from '../node/config.js'
import { answersOk, rpcCall, tailLog } from './probe.js'
import { spawnLogged, waitFor, type SpawnedProcess } from './process.js'

/**
 * How each process of a network is started and known ready: one definition, used by `startNetwork` and by the
 * controls that restart a process later (from the same handle or from another terminal), so a restarted process
 * runs with exactly the arguments, log file and readiness check it first had.
 */
export interface ProgramSpec {
  /** The process's name in pids.json: `chain`, `ipfs`, `postgres` or a node name. */
  name: string
  /** A program of the build, run by this Node; or an executable of its own (PostgreSQL's), as `account` when given. */
  program: EntryName | NativeProgram
  args: string[]
  logFile: string
  /** What the error messages call it. */
  what: string
  /** True once it answers. */
  check: () => Promise<boolean>
  /** What it replays at start-up: the wait for it to be ready scales with their size. */
  stateDirs: string[]
  /** The network's folder for what a program keeps between starts when its build is read-only (see build.ts). */
  cacheDir: string
}

export function chainSpec(L: Layout, port: number): ProgramSpec {
  const rpc = `http://127.0.0.1:${port}`
  return {
    name: 'chain',
    program: 'chain',
    args: ['--dir', L.chainDir, '--port', String(port)],
    logFile: L.log('chain'),
    what: 'the chain',
    check: async () => (await rpcCall<string>(rpc, 'eth_chainId', [])) !== undefined,
    stateDirs: [L.chainDir],
    cacheDir: L.programCache,
  }
}

export function ipfsSpec(L: Layout, apiPort: number, gatewayPort: number): ProgramSpec {
  return {
    name: 'ipfs',
    program: 'ipfs',
    args: ['--dir', L.ipfsDir, '--api-port', String(apiPort), '--gateway-port', String(gatewayPort)],
    logFile: L.log('ipfs'),
    what: 'IPFS',
    check: () => answersOk(`http://127.0.0.1:${apiPort}/api/v0/version`, 5000, 'POST'),
    stateDirs: [],
    cacheDir: L.programCache,
  }
}

export function nodeSpec(L: Layout, cfg: NodeConfigFile): ProgramSpec {
  const api = `http://${cfg.api.host ?? '127.0.0.1'}:${cfg.api.port}`
  return {
    name: cfg.node,
    program: 'node',
    args: ['--config', L.member(cfg.org).config],
    logFile: L.log(cfg.node),
    what: `member ${cfg.org}`,
    check: () => answersOk(`${api}/api/v1/status`, 2000),
    stateDirs: [resolve(L.member(cfg.org).dir, cfg.dataDir, 'db')],
    cacheDir: L.programCache,
  }
}

/** An executable that is not one of the build's programs, and the OS account it runs as (this process's when absent). */
export interface NativeProgram {
  command: string
  account?: { uid: number; gid: number }
}

/** Starts the program of `spec` from a build, detached (it outlives the caller), logging to its log file. */
export function spawnProgram(build: Build, spec: ProgramSpec): SpawnedProcess {
  if (typeof spec.program !== 'string') return spawnNative({ ...spec, program: spec.program })
  return spawnLogged({
    name: spec.name,
    command: process.execPath,
    args: build.nodeArgs(spec.program, spec.args, spec.cacheDir),
    env: build.programEnv(spec.cacheDir),
    logFile: spec.logFile,
  })
}

/** Starts an executable of its own (no build needed), detached, logging to its log file, as its account. */
export function spawnNative(spec: ProgramSpec & { program: NativeProgram }): SpawnedProcess {
  const { command, account } = spec.program
  return spawnLogged({ name: spec.name, command, args: spec.args, logFile: spec.logFile, ...(account ? { account } : {}) })
}

/** Waits for `check` (every `intervalMs`), failing at once (with the end of its log) if the process exits first. */
export async function waitProcessReady(p: SpawnedProcess, what: string, timeoutMs: number, check: () => Promise<boolean>, intervalMs = 100): Promise<void> {
  let exitCode: number | null | undefined
  void p.exited.then((c) => {
    exitCode = c
  })
  try {
    // An exit ends the wait at once: waitFor retries a check that throws until its deadline.
    await waitFor(what, async () => exitCode !== undefined || check(), { timeoutMs, intervalMs })
    if (exitCode !== undefined) throw new ExitedError(`${what} exited (code ${exitCode})`)
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- last lines of ${p.logFile} ---\n${tailLog(p.logFile, 15)}`)
  }
}

class ExitedError extends Error {}
