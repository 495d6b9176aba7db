import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs'
import { relative, resolve } from 'node:path'
import { Wallet } from 'ethers'
import { layout, type Layout } from './layout.js'
import { planPorts } from './ports.js'
import { readDescription, readPids, updatePids, writeJsonAtomic, type MemberDescription, type NetworkDescription } from './description.js'
import { assertPortFree, isAlive, projectRoot, stopPid, waitFor, type SpawnedProcess } from './process.js'
import { ensureBuild, type Build } from './build.js'
import { createNodeCertificate } from './tls.js'
import { deployBatchPin, fundAccounts, fundAndDeploy, predictDeployment } from './chain/deploy.js'
import { journalHasBlocks } from './chain/journal.js'
import type { NodeConfigFile } from '../node/config.js'
import { bytesUnder, readyTimeoutMs, seesEveryMember } from './readiness.js'
import { rpcCall } from './probe.js'
import { writeFileAtomic } from '../node/core/atomic-file.js'
import { SECP256K1_N } from './chain/hd-accounts.js'
import { useSmallSigningTables } from '../node/chain/signing-tables.js'
import { chainSpec, ipfsSpec, nodeSpec, spawnProgram, waitProcessReady, type ProgramSpec } from './specs.js'
import { NetworkControls, type NetworkControlMethods, type ProcessInfo } from './controls.js'

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

interface MemberPlan {
  org: string
  node: string
  ports: { api: number; p2p: number }
  /** Present for a member that already exists, or once a new one has been created. */
  cfg?: NodeConfigFile
}

const CHAIN_ID = 31337
/**
 * What account #0 (10,000 ETH at genesis) gives each new member: enough for any member, little enough for ~200 of
 * them. A member pays ~4e-5 ETH for a pin of one message and ~3e-4 ETH for one of a full batch (~180 messages, 10
 * topics), so 50 ETH pays for over a hundred thousand full batches, more messages than a member's in-memory database
 * holds.
 */
const FUNDING_ETHER = '50'

/**
 * Starts (or resumes) a local network: a chain with BatchPin, a local IPFS and N member nodes, each in its own
 * process logging to `<dir>/logs/`. Used by the CLI and by tests alike. On any failure it stops what it started.
 */
export async function startNetwork(opts: StartNetworkOptions): Promise<RunningNetwork> {
  const t0 = Date.now()
  // The keys this process derives addresses from and signs with (account #0's, the members'): the small table
  // costs ~20 ms to build where the default cost ~0.2 s, before the first process could be started.
  useSmallSigningTables()
  // Each progress line carries the seconds since the start, so a slow step shows where start-up time goes.
  const log = (line: string): void => opts.log?.(`${((Date.now() - t0) / 1000).toFixed(2).padStart(5)} s  ${line}`)
  const L = layout(opts.dir)
  const existing = existingMembers(L)
  // Resuming never changes membership by itself: members registered on chain cannot be taken back.
  const wanted = opts.members ?? (existing.length > 0 ? existing.length : 3)
  const timeout = opts.readyTimeoutMs ?? 60_000
  if (!Number.isInteger(wanted) || wanted < 1) throw new Error(`--members must be a whole number of at least 1 (got ${wanted})`)
  mkdirSync(L.logs, { recursive: true })

  const running = readPids(L.pidsJson).processes.filter((p) => isAlive(p.pid))
  if (running.length > 0) {
    throw new Error(`the network in ${L.root} is already running (pids ${running.map((p) => p.pid).join(', ')}); stop it with network:down first`)
  }

  const previous = readDescription(L.networkJson)
  // A resumed network keeps its ports; new members go where its own plan puts them.
  const plan = await planPorts(previous ? basePortOf(previous) : opts.basePort)
  if (previous && opts.basePort !== undefined && basePortOf(previous) !== opts.basePort) {
    log(`resuming the network in ${L.root} on the ports it was created with`)
  }
  const chainPort = previous ? Number(new URL(previous.chain.rpc).port) : plan.chain
  const ipfsApiPort = previous ? Number(new URL(previous.ipfs.api).port) : plan.ipfsApi
  const ipfsGatewayPort = previous ? Number(new URL(previous.ipfs.gateway).port) : plan.ipfsGateway

  // Members already in the folder keep their keys, ports and data; new ones are added after them. A folder created
  // before members had test controls gets them now: the local network serves its members' admin routes (see
  // network/controls.ts); a config that says `"admin": false` is left as it is.
  for (const cfg of existing) {
    if (cfg.admin === undefined) {
      cfg.admin = true
      writeJsonAtomic(L.member(cfg.org).config, cfg)
    }
  }
  const memberPlans: MemberPlan[] = existing.map((cfg) => ({ org: cfg.org, node: cfg.node, ports: { api: cfg.api.port, p2p: cfg.p2p.port }, cfg }))
  for (let i = memberPlans.length; i < wanted; i++) {
    memberPlans.push({ org: `org${i}`, node: `node${i}`, ports: await plan.member(i) })
  }

  // Name a busy port before starting anything, rather than failing half way.
  await assertPortFree(chainPort, 'chain RPC')
  await assertPortFree(ipfsApiPort, 'IPFS API')
  await assertPortFree(ipfsGatewayPort, 'IPFS gateway')
  for (const m of memberPlans) {
    await assertPortFree(m.ports.api, `${m.org} API`)
    await assertPortFree(m.ports.p2p, `${m.org} p2p`)
  }

  const started: SpawnedProcess[] = []
  const launch = (from: Build, spec: ProgramSpec): SpawnedProcess => {
    const p = spawnProgram(from, spec)
    const i = started.findIndex((s) => s.name === spec.name)
    if (i >= 0) started[i] = p
    else started.push(p)
    updatePids(L.pidsJson, () => ({ processes: started.map((x) => ({ name: x.name, pid: x.pid })) }))
    return p
  }
  // What pids.json names is the record: a process restarted by `network -- restart` (another process) is only there.
  const stopAll = async (): Promise<void> => {
    const recorded = readPids(L.pidsJson).processes
    const all = [...recorded, ...started.filter((p) => !recorded.some((r) => r.pid === p.pid))]
    for (const p of all.reverse()) await stopPid(p.pid)
    updatePids(L.pidsJson, (pids) => ({ ...pids, processes: [] }))
  }

  // The programs run compiled (network/build.ts); compiled now if a source changed since the last build.
  const build = await ensureBuild()
  if (build.compiled) log(`compiled the node, chain and IPFS programs into ${relative(projectRoot, build.dir)} in ${build.seconds.toFixed(2)} s`)

  // Where the contract is, known before the chain has started when possible: a resumed network's recorded address
  // (or, in a folder whose first start failed before network.json was written, the one its members were configured
  // with); for a new network, the address it will get (a CREATE address is a function of deployer and nonce:
  // account #0 funds the new members, then deploys, in one block). Only a folder whose chain mined blocks without its members
  // ever being configured has to wait for the chain and the deployment before members can be configured.
  const fresh = memberPlans.filter((m) => m.cfg === undefined)
  const recorded = previous ? { contract: previous.chain.contract, firstBlock: previous.chain.firstBlock } : contractOfMembers(memberPlans)
  const predicted = recorded === undefined && !journalHasBlocks(L.chainDir) ? predictDeployment(fresh.length) : undefined
  const known = recorded ?? (predicted ? { contract: predicted.address, firstBlock: predicted.block } : undefined)

  try {
    // Readiness is awaited step by step, but the first process to fail ends the start at once, whatever the step.
    let failed: (err: unknown) => void = () => {}
    const firstFailure = settled(new Promise<never>((_, reject) => (failed = reject)))
    const watch = (p: Promise<void>): Promise<void> => {
      p.catch(failed)
      return settled(p)
    }
    const step = <T>(p: Promise<T>): Promise<T> => Promise.race([p, firstFailure])

    // 1. The chain (replaying its journal when resuming) and IPFS, at once.
    const rpc = `http://127.0.0.1:${chainPort}`
    const ipfs = { api: `http://127.0.0.1:${ipfsApiPort}`, gateway: `http://127.0.0.1:${ipfsGatewayPort}` }
    log(`starting chain on ${rpc}; IPFS: API ${ipfs.api}, gateway ${ipfs.gateway}`)
    const chainProgram = chainSpec(L, chainPort)
    const ipfsProgram = ipfsSpec(L, ipfsApiPort, ipfsGatewayPort)
    const chain = launch(build, chainProgram)
    const ipfsProc = launch(build, ipfsProgram)

    // 2. New members: a signing key, TLS material and a config file each.
    const createMembers = async (at: { contract: string; firstBlock: number }): Promise<void> => {
      await Promise.all(fresh.map(async (m) => (m.cfg = await createMember(L, m.org, m.node, m.ports, { rpc, ...at }, ipfs))))
    }
    const nodesReady: Promise<void>[] = []
    const startNodes = (plans: MemberPlan[]): void => {
      if (plans.length === 0) return
      log(`starting ${plans.length} member node${plans.length === 1 ? '' : 's'} (${plans.map((m) => m.org).join(', ')})`)
      const launched = plans.map((m) => {
        const { what, check, stateDirs, ...spec } = nodeSpec(L, m.cfg!)
        return { m, what, check, stateDirs, p: launch(build, { what, check, stateDirs, ...spec }) }
      })
      // Polled less often the more there are: the start waits for them all anyway, and the polls cost this process the
      // CPU the members need (20 members polled every 100 ms while they boot: ~2,000 requests).
      const interval = Math.max(100, 20 * plans.length)
      for (const { m, what, check, stateDirs, p } of launched) {
        const wait = readyTimeoutMs(timeout, stateDirs)
        if (wait > timeout) log(`${m.org} has ${Math.round(bytesUnder(stateDirs[0]!) / 2 ** 20)} MiB of state to load: waiting up to ${Math.round(wait / 1000)} s for it`)
        nodesReady.push(watch(waitProcessReady(p, what, wait, check, interval).then(() => log(`${m.org} API up`))))
      }
    }

    // 3. Member nodes start while the chain boots when they can: a node waits quietly for the chain and for the
    //    contract. New members of an existing network wait for their funding, though: the contract is already there,
    //    so they would try to register before they can pay for it.
    if (known) {
      await step(createMembers(known))
      startNodes(predicted ? memberPlans : memberPlans.filter((m) => !fresh.includes(m)))
    }
    // Polled from here on rather than from their spawn: every process is started first (polls cost this process CPU
    // that the children need more).
    const chainReady = watch(waitProcessReady(chain, chainProgram.what, readyTimeoutMs(timeout, chainProgram.stateDirs), chainProgram.check).then(() => log('chain ready')))
    const ipfsReady = watch(waitProcessReady(ipfsProc, ipfsProgram.what, timeout, ipfsProgram.check).then(() => log('IPFS ready')))

    // 4. Once the chain answers: new members funded and the contract deployed, in one block and as predicted (a new
    //    network), or funded and the contract found (an existing one).
    await step(chainReady)
    const addresses = (): string[] => fresh.map((m) => new Wallet(readFileSync(L.member(m.org).signingKey, 'utf8').trim()).address)
    const funded = (): void => log(`funded ${fresh.map((m) => m.org).join(', ')} with ${FUNDING_ETHER} ETH each`)
    const fund = async (): Promise<void> => {
      if (fresh.length === 0) return
      await fundAccounts(rpc, addresses(), FUNDING_ETHER)
      funded()
    }
    let contract: { contract: string; firstBlock: number }
    if (predicted) {
      const deployed = await step(fundAndDeploy(rpc, addresses(), FUNDING_ETHER, predicted))
      funded()
      log(`deployed BatchPin at ${deployed.address} (block ${deployed.block}, with the funding), as predicted`)
      contract = { contract: deployed.address, firstBlock: deployed.block }
    } else if (known) {
      await step(fund())
      contract = await step(ensureContract(rpc, recorded, L, log))
    } else {
      contract = await step(ensureContract(rpc, undefined, L, log))
      await step(createMembers(contract))
      await step(fund())
    }
    if (!predicted) startNodes(known ? fresh : memberPlans)
    const { contract: contractAddress, firstBlock } = contract
    const members: MemberDescription[] = memberPlans.map((m) => describeMember(m.cfg!, L))
    await step(ipfsReady)
    await step(Promise.all(nodesReady))

    // 5. Ready only when every member has registered through the chain and sees every other member. One member is
    //    polled at a time: they all come to see the whole network at about the same moment, and each poll lists every
    //    identity (certificates included), which costs the member too; polled all at once every 100 ms, a 20-member
    //    start spent seconds of CPU answering. A member checked after the first one has mostly caught up already.
    log('waiting for every member to see every org and node')
    const deadline = Date.now() + timeout
    for (const m of members) {
      await step(waitFor(`${m.org} to list every org and node`, () => seesEveryMember(m.api, members), { timeoutMs: Math.max(1000, deadline - Date.now()), intervalMs: 100 }))
    }

    const description: NetworkDescription = { chain: { rpc, chainId: CHAIN_ID, contract: contractAddress, firstBlock }, ipfs, members }
    writeJsonAtomic(L.networkJson, description)
    const startupSeconds = (Date.now() - t0) / 1000
    log(`network ready in ${startupSeconds.toFixed(1)} s`)
    const controls = new NetworkControls(L.root, { description, readyTimeoutMs: timeout })
    return {
      dir: L.root,
      description,
      get processes() {
        return controls.processes()
      },
      startupSeconds,
      controls,
      stop: stopAll,
      pause: (name) => controls.pause(name),
      resume: (name) => controls.resume(name),
      kill: (name, signal) => controls.kill(name, signal),
      // From the newest build, as a restart under tsx ran the sources as they are now.
      restart: (name) => controls.restart(name),
      hold: (sel) => controls.hold(sel),
      release: (sel) => controls.release(sel),
      drop: (sel) => controls.drop(sel),
      holdReading: (member, source) => controls.holdReading(member, source),
      releaseReading: (member, source) => controls.releaseReading(member, source),
      controlsOf: (member) => controls.controlsOf(member),
      mining: (on) => controls.mining(on),
      mine: (blocks) => controls.mine(blocks),
      trace: (id, opts) => controls.trace(id, opts),
      verify: (opts) => controls.verify(opts),
    }
  } catch (err) {
    await stopAll()
    throw err
  }
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
      await stopPid(p.pid)
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
    for (const p of alive.reverse()) await stopPid(p.pid)
  }
}

export function recordOrchestrator(dir: string, pid: number | undefined): void {
  updatePids(layout(dir).pidsJson, (pids) => (pid === undefined ? { processes: pids.processes } : { ...pids, orchestrator: pid }))
}

async function ensureContract(
  rpc: string,
  recorded: { contract: string; firstBlock: number } | undefined,
  L: Layout,
  log: (line: string) => void,
): Promise<{ contract: string; firstBlock: number }> {
  if (recorded) {
    const code = await rpcCall<string>(rpc, 'eth_getCode', [recorded.contract, 'latest'])
    if (!code || code === '0x') {
      throw new Error(`BatchPin contract ${recorded.contract} is not on the chain any more (${L.chainDir} lost its journal?); remove ${L.root} to start a new network`)
    }
    return recorded
  }
  const deployed = await deployBatchPin(rpc)
  log(`deployed BatchPin at ${deployed.address} (block ${deployed.block})`)
  return { contract: deployed.address, firstBlock: deployed.block }
}

/**
 * The contract the folder's existing members were configured with, when they agree on one: a folder whose first
 * start failed after its members were created has them but no network.json yet.
 */
function contractOfMembers(plans: MemberPlan[]): { contract: string; firstBlock: number } | undefined {
  const chains = plans.flatMap((m) => (m.cfg ? [m.cfg.chain] : []))
  const first = chains[0]
  if (first === undefined || !chains.every((c) => c.contract.toLowerCase() === first.contract.toLowerCase())) return undefined
  return { contract: first.contract.toLowerCase(), firstBlock: Math.min(...chains.map((c) => c.firstBlock)) }
}

/** The same promise, marked as handled so that it may reject before it is awaited; awaiting it still throws. */
function settled<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined)
  return p
}

/** The base port a network was created with, or undefined when its ports were picked free. */
function basePortOf(d: NetworkDescription): number | undefined {
  const chain = Number(new URL(d.chain.rpc).port)
  const first = d.members[0]
  return first && Number(new URL(first.api).port) === chain + 10 ? chain : undefined
}

function existingMembers(L: Layout): NodeConfigFile[] {
  const root = `${L.root}/members`
  if (!existsSync(root)) return []
  return readdirSync(root)
    .filter((org) => existsSync(L.member(org).config))
    .map((org) => JSON.parse(readFileSync(L.member(org).config, 'utf8')) as NodeConfigFile)
    .sort((a, b) => memberIndex(a.org) - memberIndex(b.org) || a.org.localeCompare(b.org))
}

function memberIndex(org: string): number {
  const m = /(\d+)$/.exec(org)
  return m ? Number(m[1]) : Number.MAX_SAFE_INTEGER
}

async function createMember(
  L: Layout,
  org: string,
  node: string,
  ports: { api: number; p2p: number },
  chain: { rpc: string; contract: string; firstBlock: number },
  ipfs: { api: string; gateway: string },
): Promise<NodeConfigFile> {
  const M = L.member(org)
  mkdirSync(`${M.dir}/tls`, { recursive: true })
  const tls = await createNodeCertificate(org, node)
  // Durable before the config that marks the member as created, and written in parallel with every other new
  // member's (fsyncs that each held up the start by ~10 ms, one after the other, when written synchronously).
  await Promise.all([
    writeFileAtomic(M.signingKey, randomPrivateKey() + '\n', { mode: 0o600 }),
    writeFileAtomic(M.cert, tls.cert),
    writeFileAtomic(M.key, tls.key, { mode: 0o600 }),
  ])
  const cfg: NodeConfigFile = {
    org,
    node,
    signingKeyFile: 'signing.key',
    chain,
    ipfs,
    api: { host: '127.0.0.1', port: ports.api },
    p2p: { host: '127.0.0.1', port: ports.p2p, certFile: 'tls/cert.pem', keyFile: 'tls/key.pem' },
    dataDir: 'data',
    admin: true,
  }
  await writeFileAtomic(M.config, JSON.stringify(cfg, null, 2) + '\n')
  return cfg
}

/**
 * A random secp256k1 private key, as `Wallet.createRandom().privateKey` gives but without deriving an HD wallet
 * from a fresh mnemonic first (tens of milliseconds of the start-up per member).
 */
function randomPrivateKey(): string {
  for (;;) {
    const key = `0x${randomBytes(32).toString('hex')}`
    const k = BigInt(key)
    if (k > 0n && k < SECP256K1_N) return key
  }
}

function describeMember(cfg: NodeConfigFile, L: Layout): MemberDescription {
  const host = cfg.api.host ?? '127.0.0.1'
  const key = new Wallet(readFileSync(L.member(cfg.org).signingKey, 'utf8').trim()).address.toLowerCase()
  return {
    org: cfg.org,
    node: cfg.node,
    did: `did:firefly:org/${cfg.org}`,
    api: `http://${host}:${cfg.api.port}`,
    ws: `ws://${host}:${cfg.api.port}/ws`,
    ui: `http://${host}:${cfg.api.port}/ui/`,
    apiPage: `http://${host}:${cfg.api.port}/api`,
    p2p: `https://${cfg.p2p.host ?? '127.0.0.1'}:${cfg.p2p.port}`,
    key,
  }
}
