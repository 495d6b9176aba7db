import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startNetwork, stopNetwork, type RunningNetwork, type StartNetworkOptions } from '../../network/network.js'
import { readPids, type MemberDescription } from '../../network/description.js'
import { layout } from '../../network/layout.js'
import { isAlive, projectRoot } from '../../network/process.js'
import { moveMemberEngine } from '../../network/move-db.js'
import { testDatabase } from './postgres.js'

/** The network command as npm's scripts run it (`node network/launch.mjs <verb> ...`), for a test to spawn. */
export const LAUNCHER = join(projectRoot, 'network', 'launch.mjs')

/** Runs `npm run network -- <args> --dir <dir>` as a user would, to its exit; answers its code and output. */
export function networkCli(dir: string, args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [LAUNCHER, ...args, '--dir', dir], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()))
  return new Promise((res) => child.once('exit', (code) => res({ code, out, err })))
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `parley-${prefix}-`))
}

/** What a test network is started with: the network command's options, and members to run on PostgreSQL. */
export type TestNetworkOptions = Omit<StartNetworkOptions, 'dir'> & {
  dir?: string
  /**
   * Members moved, once started, to a database of their own on the run's PostgreSQL (test/support/postgres.ts), the
   * way a user moves one (`network -- move-db`): the others stay on sql.js, so the suite checks both engines at once.
   */
  onPostgres?: readonly string[]
}

/**
 * Starts a network for a test suite through the same code the CLI uses, and stops it by PID afterwards even
 * when a test failed; `stop()` also reports any process left alive so the suite can fail on it.
 */
export async function testNetwork(prefix: string, opts: TestNetworkOptions = {}) {
  const { onPostgres = [], ...startOpts } = opts
  const dir = opts.dir ?? tempDir(prefix)
  let net: RunningNetwork | undefined
  try {
    net = await startNetwork({ members: 3, ...startOpts, dir })
    for (const org of onPostgres) {
      // Dropped with the run's server, which the run's teardown stops after the networks.
      const db = await testDatabase({ empty: true, prefix: prefix.replace(/\W/g, '_') })
      await moveMemberEngine(net.controls, org, { to: 'postgres', databaseUrl: db.url })
    }
  } catch (err) {
    await net?.stop().catch(() => {})
    await stopNetwork(dir)
    throw err
  }
  return {
    dir,
    net,
    /** Stops everything and answers the PIDs that were still alive afterwards (should be none). */
    async stop(keepDir = false): Promise<number[]> {
      const pids = readPids(layout(dir).pidsJson).processes.map((p) => p.pid)
      const all = [...new Set([...pids, ...(net?.processes.map((p) => p.pid) ?? [])])]
      await net?.stop()
      await stopNetwork(dir)
      const alive = all.filter(isAlive)
      if (!keepDir) rmSync(dir, { recursive: true, force: true })
      return alive
    },
  }
}

/**
 * A network for the enclosing suite (see testNetwork): started in a before() hook and stopped in an after() hook,
 * which fails if any of its processes outlived the stop. `members` is filled, and `net` and `dir` can be read,
 * once it has started.
 */
export function suiteNetwork(prefix: string, opts: Omit<TestNetworkOptions, 'dir'> = {}) {
  let t: Awaited<ReturnType<typeof testNetwork>> | undefined
  const members: MemberDescription[] = []
  before(async function () {
    t = await testNetwork(prefix, opts)
    members.push(...t.net.description.members)
  })
  after(async function () {
    const alive = await t?.stop()
    expect(alive ?? [], 'processes left alive after the network stopped').to.deep.equal([])
  })
  return networkHandle(members, () => t, `the ${prefix} network has not started`)
}

/** What a suite holds of its network: the members once started, and `net` and `dir`, which throw before then. */
export function networkHandle(members: MemberDescription[], current: () => { net: RunningNetwork; dir: string } | undefined, notStarted: string) {
  const started = (): { net: RunningNetwork; dir: string } => {
    const t = current()
    if (!t) throw new Error(notStarted)
    return t
  }
  return {
    members,
    get net(): RunningNetwork {
      return started().net
    },
    get dir(): string {
      return started().dir
    },
  }
}

export async function getJson<T>(url: string): Promise<{ status: number; body: T }> {
  const res = await fetch(url)
  return { status: res.status, body: (await res.json()) as T }
}
