import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs'
import { Wallet } from 'ethers'
import { layout, type Layout } from './layout.js'
import { planPorts } from './ports.js'
import { readDescription, readPids, writeJsonAtomic, type MemberDescription, type NetworkDescription, type PidFile } from './description.js'
import { assertPortFree, isAlive, signalPid, spawnLogged, stopPid, tsEntry, waitFor, type SpawnedProcess } from './process.js'
import { createNodeCertificate } from './tls.js'
import { deployBatchPin, fundAccounts } from './chain/deploy.js'
import type { NodeConfigFile } from '../node/config.js'
import { rpcCall, tailLog } from './probe.js'
import { writeFileAtomicSync } from '../node/core/atomic-file.js'

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

export interface RunningNetwork {
  dir: string
  description: NetworkDescription
  processes: { name: string; pid: number; logFile: string }[]
  /** Seconds from the call to ready. */
  startupSeconds: number
  /** Stops every process this network started, by PID (nodes first, chain last). */
  stop(): Promise<void>
  /** Sends a signal to one process (`chain`, `ipfs` or a node name), e.g. SIGKILL to test recovery. */
  kill(name: string, signal?: NodeJS.Signals): Promise<void>
  /** Starts a stopped process again with the same arguments and waits until it is ready. */
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
const FUNDING_ETHER = '1000'

/**
 * Starts (or resumes) a local network: a chain with BatchPin, a local IPFS and N member nodes, each in its own
 * process logging to `<dir>/logs/`. Used by the CLI and by tests alike. On any failure it stops what it started.
 */
export async function startNetwork(opts: StartNetworkOptions): Promise<RunningNetwork> {
  const t0 = Date.now()
  const log = opts.log ?? (() => {})
  const L = layout(opts.dir)
  const wanted = opts.members ?? 3
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

  // Members already in the folder keep their keys, ports and data; new ones are added after them.
  const memberPlans: MemberPlan[] = existingMembers(L).map((cfg) => ({ org: cfg.org, node: cfg.node, ports: { api: cfg.api.port, p2p: cfg.p2p.port }, cfg }))
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
  const readiness = new Map<string, { spec: Parameters<typeof spawnLogged>[0]; what: string; check: () => Promise<boolean> }>()
  const savePids = (): void => writeJsonAtomic(L.pidsJson, { processes: started.map((p) => ({ name: p.name, pid: p.pid })) } satisfies PidFile)
  const launch = (spec: Parameters<typeof spawnLogged>[0], what: string, check: () => Promise<boolean>): SpawnedProcess => {
    const p = spawnLogged(spec)
    const i = started.findIndex((s) => s.name === spec.name)
    if (i >= 0) started[i] = p
    else started.push(p)
    readiness.set(spec.name, { spec, what, check })
    savePids()
    return p
  }
  const stopAll = async (): Promise<void> => {
    for (const p of [...started].reverse()) await stopPid(p.pid)
    writeJsonAtomic(L.pidsJson, { processes: [] })
  }

  try {
    // 1. The chain, replaying its journal when resuming.
    const rpc = `http://127.0.0.1:${chainPort}`
    log(`starting chain on ${rpc}`)
    const chain = launch(
      { name: 'chain', command: process.execPath, args: tsEntry('network/chain/main.ts', ['--dir', L.chainDir, '--port', String(chainPort)]), logFile: L.log('chain') },
      'the chain',
      async () => (await rpcCall<string>(rpc, 'eth_chainId', [])) !== undefined,
    )
    // 2. IPFS, starting while the chain loads and the members are prepared.
    const ipfs = { api: `http://127.0.0.1:${ipfsApiPort}`, gateway: `http://127.0.0.1:${ipfsGatewayPort}` }
    log(`starting IPFS: API ${ipfs.api}, gateway ${ipfs.gateway}`)
    const ipfsProc = launch(
      {
        name: 'ipfs',
        command: process.execPath,
        args: tsEntry('network/ipfs/main.ts', ['--dir', L.ipfsDir, '--api-port', String(ipfsApiPort), '--gateway-port', String(ipfsGatewayPort)]),
        logFile: L.log('ipfs'),
      },
      'IPFS',
      async () => (await fetch(`${ipfs.api}/api/v0/version`, { method: 'POST' })).ok,
    )

    await waitProcessReady(chain, 'the chain', timeout, readiness.get('chain')!.check)

    // 3. The contract, deployed once per network.
    const { contract, firstBlock } = await ensureContract(rpc, previous, L, log)

    // 4. New members: a funded signing key, TLS material and a config file each.
    const fresh = memberPlans.filter((m) => m.cfg === undefined)
    for (const m of fresh) m.cfg = await createMember(L, m.org, m.node, m.ports, { rpc, contract, firstBlock }, ipfs)
    if (fresh.length > 0) {
      const addresses = fresh.map((m) => new Wallet(readFileSync(L.member(m.org).signingKey, 'utf8').trim()).address)
      await fundAccounts(rpc, addresses, FUNDING_ETHER)
      log(`funded ${fresh.map((m) => m.org).join(', ')} with ${FUNDING_ETHER} ETH each`)
    }
    await waitProcessReady(ipfsProc, 'IPFS', timeout, readiness.get('ipfs')!.check)

    // 5. The member nodes, in parallel.
    const members: MemberDescription[] = memberPlans.map((m) => describeMember(m.cfg!, L))
    log(`starting ${members.length} member nodes`)
    await Promise.all(
      memberPlans.map((m, i) => {
        const what = `member ${m.org}`
        const check = async (): Promise<boolean> => (await fetch(`${members[i]!.api}/api/v1/status`)).ok
        const p = launch({ name: m.node, command: process.execPath, args: tsEntry('node/main.ts', ['--config', L.member(m.org).config]), logFile: L.log(m.node) }, what, check)
        return waitProcessReady(p, what, timeout, check)
      }),
    )

    // 6. Ready only when every member has registered through the chain and sees every other member.
    log('waiting for every member to see every org and node')
    await Promise.all(
      members.map((m) =>
        waitFor(
          `${m.org} to list every org and node`,
          async () => {
            const [orgs, nodes] = await Promise.all(['organizations', 'nodes'].map(async (k) => (await (await fetch(`${m.api}/api/v1/network/${k}?limit=1000`)).json()) as { did: string }[]))
            return members.every((o) => orgs!.some((i) => i.did === o.did)) && members.every((o) => nodes!.some((i) => i.did === `did:firefly:node/${o.node}`))
          },
          { timeoutMs: timeout, intervalMs: 200 },
        ),
      ),
    )

    const description: NetworkDescription = { chain: { rpc, chainId: CHAIN_ID, contract, firstBlock }, ipfs, members }
    writeJsonAtomic(L.networkJson, description)
    const startupSeconds = (Date.now() - t0) / 1000
    log(`network ready in ${startupSeconds.toFixed(1)} s`)
    return {
      dir: L.root,
      description,
      get processes() {
        return started.map((p) => ({ name: p.name, pid: p.pid, logFile: p.logFile }))
      },
      startupSeconds,
      stop: stopAll,
      async kill(name, signal = 'SIGKILL') {
        const p = started.find((s) => s.name === name)
        if (!p) throw new Error(`no process named ${name} in this network`)
        signalPid(p.pid, signal)
        await p.exited
      },
      async restart(name) {
        const r = readiness.get(name)
        const old = started.find((s) => s.name === name)
        if (!r || !old) throw new Error(`no process named ${name} in this network`)
        if (isAlive(old.pid)) throw new Error(`${name} (pid ${old.pid}) is still running`)
        const p = launch(r.spec, r.what, r.check)
        await waitProcessReady(p, r.what, timeout, r.check)
      },
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
    // A foreground `network:up` stops its own children on SIGTERM.
    await stopPid(orchestrator, 15_000)
  }
  for (const p of [...processes].reverse()) {
    if (isAlive(p.pid)) {
      log(`stopping ${p.name} (pid ${p.pid})`)
      await stopPid(p.pid)
      stopped++
    }
  }
  if (existsSync(L.pidsJson)) writeJsonAtomic(L.pidsJson, { processes: [] })
  return stopped
}

export function recordOrchestrator(dir: string, pid: number | undefined): void {
  const L = layout(dir)
  const pids = readPids(L.pidsJson)
  writeJsonAtomic(L.pidsJson, pid === undefined ? { processes: pids.processes } : { ...pids, orchestrator: pid })
}

async function ensureContract(
  rpc: string,
  previous: NetworkDescription | undefined,
  L: Layout,
  log: (line: string) => void,
): Promise<{ contract: string; firstBlock: number }> {
  if (previous) {
    const code = await rpcCall<string>(rpc, 'eth_getCode', [previous.chain.contract, 'latest'])
    if (!code || code === '0x') {
      throw new Error(`BatchPin contract ${previous.chain.contract} is not on the chain any more (${L.chainDir} lost its journal?); remove ${L.root} to start a new network`)
    }
    return { contract: previous.chain.contract, firstBlock: previous.chain.firstBlock }
  }
  const deployed = await deployBatchPin(rpc)
  log(`deployed BatchPin at ${deployed.address.toLowerCase()} (block ${deployed.block})`)
  return { contract: deployed.address.toLowerCase(), firstBlock: deployed.block }
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
  writeFileAtomicSync(M.signingKey, Wallet.createRandom().privateKey + '\n', { mode: 0o600 })
  const tls = await createNodeCertificate(org, node)
  writeFileAtomicSync(M.cert, tls.cert)
  writeFileAtomicSync(M.key, tls.key, { mode: 0o600 })
  const cfg: NodeConfigFile = {
    org,
    node,
    signingKeyFile: 'signing.key',
    chain,
    ipfs,
    api: { host: '127.0.0.1', port: ports.api },
    p2p: { host: '127.0.0.1', port: ports.p2p, certFile: 'tls/cert.pem', keyFile: 'tls/key.pem' },
    dataDir: 'data',
  }
  writeJsonAtomic(M.config, cfg)
  return cfg
}

function describeMember(cfg: NodeConfigFile, L: Layout): MemberDescription {
  const host = cfg.api.host ?? '127.0.0.1'
  const key = new Wallet(readFileSync(L.member(cfg.org).signingKey, 'utf8').trim()).address.toLowerCase()
  return {
    org: cfg.org,
    node: cfg.node,
    did: `did:firefly:org/${cfg.org}`,
    api: `http://${host}:${cfg.api.port}`,
    p2p: `https://${cfg.p2p.host ?? '127.0.0.1'}:${cfg.p2p.port}`,
    key,
  }
}

/** Waits for `check`, failing at once (with the end of its log) if the process exits first. */
async function waitProcessReady(p: SpawnedProcess, what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  let exitCode: number | null | undefined
  void p.exited.then((c) => {
    exitCode = c
  })
  try {
    await waitFor(what, async () => {
      if (exitCode !== undefined) throw new ExitedError(`${what} exited (code ${exitCode})`)
      return check()
    }, { timeoutMs, intervalMs: 100 })
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- last lines of ${p.logFile} ---\n${tailLog(p.logFile, 15)}`)
  }
}

class ExitedError extends Error {}
