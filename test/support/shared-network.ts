/**
 * One 3-member network shared by the integration suites that only send and read (they keep to topics and namespaces
 * of their own: `runId()`), instead of a network per file: a start costs ~6 s of CPU on two cores.
 *
 * Each mocha process (the main one in serial mode, each worker in parallel mode) starts it the first time a suite
 * asks, and keeps it for the suites it runs after; a suite that needs processes killed, paused or held, or a
 * network of another size, takes its own with `suiteNetwork` (test/support/network.ts). The run's teardown
 * (test/support/run-hooks.ts) stops every shared network by PID, from the list each process keeps in the run
 * folder, even when a suite failed or a worker died.
 *
 * A suite that leaves the network unfit for the next (a process down or paused, a control in force) fails in its
 * own after hook, and the next suite starts a fresh network.
 *
 * org1 keeps its state in a database of the run's PostgreSQL (test/support/postgres.ts), org0 and org2 in sql.js: so
 * every suite on the shared network (ordering, private messages, events, data, the SDK) runs across both engines, and
 * a verdict or an event that differed between them would fail it. It gets there the way a user moves a member
 * (`network -- move-db`), which costs a restart of one member once per network.
 */
import { expect } from 'chai'
import { appendFileSync, existsSync, readFileSync, rmSync } from 'node:fs'
import type { RunningNetwork } from '../../network/network.js'
import { stopNetwork } from '../../network/network.js'
import { readPids, type MemberDescription } from '../../network/description.js'
import { layout } from '../../network/layout.js'
import { isAlive } from '../../network/process.js'
import { describeControls, NO_CONTROLS } from '../../network/controls.js'
import { networkHandle, tempDir, testNetwork } from './network.js'
import { sharedNetworksRegistry } from './shared-network-registry.js'

type TestNetwork = Awaited<ReturnType<typeof testNetwork>>

const current = Symbol.for('parley.test.sharedNetwork')
const holder = globalThis as { [current]?: Promise<TestNetwork> }

/**
 * The process's shared network for the enclosing suite: started (or reused) in a before() hook; checked, not
 * stopped, in an after() hook. `members` is filled, and `net` and `dir` can be read, once it is there.
 */
export function sharedNetwork() {
  let t: TestNetwork | undefined
  const members: MemberDescription[] = []
  before(async function () {
    this.timeout(120_000)
    t = await acquire()
    members.push(...t.net.description.members)
  })
  after(async function () {
    if (!t) return
    const problems = await unfitness(t.net)
    if (problems.length > 0) {
      // The next suite must not inherit it.
      holder[current] = undefined
      await t.stop()
      expect(problems, 'this suite left the shared network unfit for the next one').to.deep.equal([])
    }
  })
  return networkHandle(members, () => t, 'the shared network has not started')
}

async function acquire(): Promise<TestNetwork> {
  const existing = holder[current]
  if (existing !== undefined) {
    const t = await existing.catch(() => undefined)
    if (t !== undefined && (await unfitness(t.net)).length === 0) return t
    await t?.stop()
  }
  const next = start()
  holder[current] = next
  next.catch(() => (holder[current] = undefined))
  return next
}

async function start(): Promise<TestNetwork> {
  const run = process.env.PARLEY_TEST_RUN
  if (run === undefined) throw new Error('no test run folder: .mocharc.json must require test/support/run-hooks.ts')
  // Recorded before the start, so that the teardown stops whatever part of it started.
  const dir = tempDir('shared')
  appendFileSync(sharedNetworksRegistry(run), `${dir}\n`)
  return testNetwork('shared', { dir, onPostgres: [POSTGRES_MEMBER] })
}

/** The shared network's member on PostgreSQL. */
export const POSTGRES_MEMBER = 'org1'

/** What would make the network mislead the next suite: a process not running, a member's control in force. */
async function unfitness(net: RunningNetwork): Promise<string[]> {
  const problems = net.processes.filter((p) => p.state !== 'running').map((p) => `${p.name} is ${p.state}`)
  if (problems.length > 0) return problems
  for (const m of net.description.members) {
    const controls = describeControls(await net.controlsOf(m.org))
    if (controls !== NO_CONTROLS) problems.push(`${m.org}: ${controls}`)
  }
  if (!(await net.controls.isMining())) problems.push('the chain is not mining')
  return problems
}

/**
 * Stops every shared network the run's processes started, by PID, and removes their folders; answers the PIDs
 * still alive afterwards (there should be none).
 */
export async function stopSharedNetworks(runFolder: string): Promise<number[]> {
  const registry = sharedNetworksRegistry(runFolder)
  if (!existsSync(registry)) return []
  const alive: number[] = []
  for (const dir of readFileSync(registry, 'utf8').split('\n').filter((l) => l !== '')) {
    const pids = readPids(layout(dir).pidsJson).processes.map((p) => p.pid)
    await stopNetwork(dir)
    alive.push(...pids.filter(isAlive))
    rmSync(dir, { recursive: true, force: true })
  }
  return alive
}
