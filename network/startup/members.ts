import { readFileSync } from 'node:fs'
import type { Layout } from '../layout.js'
import type { MemberDescription } from '../description.js'
import type { Build } from '../build.js'
import { memberConfig, writeMemberFiles } from '../member-files.js'
import { bytesUnder, readyTimeoutMs } from '../readiness.js'
import { nodeSpec, waitProcessReady } from '../specs.js'
import type { NodeConfigFile } from '../../node/config.js'
import type { MemberPlan, NetworkPlan } from './plan.js'
import type { FirstFailure, Launcher } from './launcher.js'
import { memberDatabaseConfig, type DatabaseRecord } from './database.js'
import { withoutPassword } from '../postgres/databases.js'
import { addressOfKey } from '../../node/chain/key-address.js'

/** Where the members' nodes find the chain (and its contract), IPFS, and their databases. */
export interface MemberEndpoints {
  chain: { rpc: string; contract: string; firstBlock: number }
  ipfs: { api: string; gateway: string }
  database: DatabaseRecord
}

/** Start-up phase: new members get a signing key, TLS material and a config file each, all at once. */
export async function createMembers(L: Layout, fresh: MemberPlan[], at: MemberEndpoints): Promise<void> {
  await Promise.all(fresh.map(async (m) => (m.cfg = await createMember(L, m.org, m.node, m.ports, at))))
}

/**
 * Start-up phase: launches the nodes of `plans` (members with a config) and watches each one's readiness, adding it
 * to `ready`: the start awaits them all later, and the first to fail ends it at once.
 */
export function startMemberNodes(launcher: Launcher, build: Build, plan: NetworkPlan, plans: MemberPlan[], failure: FirstFailure, ready: Promise<void>[], log: (line: string) => void): void {
  if (plans.length === 0) return
  log(`starting ${plans.length} member node${plans.length === 1 ? '' : 's'} (${plans.map((m) => m.org).join(', ')})`)
  const launched = plans.map((m) => {
    const { what, check, stateDirs, ...spec } = nodeSpec(plan.L, m.cfg!)
    return { m, what, check, stateDirs, p: launcher.launch(build, { what, check, stateDirs, ...spec }) }
  })
  // Polled less often the more there are: the start waits for them all anyway, and the polls cost this process the
  // CPU the members need (20 members polled every 100 ms while they boot: ~2,000 requests).
  const interval = Math.max(100, 20 * plans.length)
  for (const { m, what, check, stateDirs, p } of launched) {
    const wait = readyTimeoutMs(plan.timeout, stateDirs)
    if (wait > plan.timeout) log(`${m.org} has ${Math.round(bytesUnder(stateDirs[0]!) / 2 ** 20)} MiB of state to load: waiting up to ${Math.round(wait / 1000)} s for it`)
    ready.push(failure.watch(waitProcessReady(p, what, wait, check, interval).then(() => log(`${m.org} API up`))))
  }
}

async function createMember(L: Layout, org: string, node: string, ports: { api: number; p2p: number }, at: MemberEndpoints): Promise<NodeConfigFile> {
  const database = memberDatabaseConfig(at.database, org)
  const cfg = memberConfig({ org, node, host: '127.0.0.1', apiPort: ports.api, p2pPort: ports.p2p, chain: at.chain, ipfs: at.ipfs, admin: true, ...(database ? { database } : {}) })
  await writeMemberFiles(L.member(org).config, cfg, ['127.0.0.1', 'localhost'])
  return cfg
}

/** A member's addresses as network.json lists them. */
export function describeMember(cfg: NodeConfigFile, L: Layout): MemberDescription {
  const host = cfg.api.host ?? '127.0.0.1'
  const key = addressOfKey(readFileSync(L.member(cfg.org).signingKey, 'utf8').trim())
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
    ...(cfg.database?.url !== undefined ? { database: withoutPassword(cfg.database.url) } : {}),
  }
}
