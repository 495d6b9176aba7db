/**
 * A network described from its members' APIs alone, for members on their own hosts, which share no state folder and
 * so no network.json: each member's `/api/v1/status` says who it is (org, node, key, p2p endpoint) and what it uses
 * (the chain's RPC URL and contract, IPFS). The result is what network.json would say, for verify and trace.
 */
import type { MemberDescription, NetworkDescription } from '../description.js'
import type { NodeStatus } from '../../node/services.js'
import { memberGet } from '../inspect.js'
import { rpcCall } from '../probe.js'

/** The member whose API is at `api` (http(s)://host:port), as its status describes it. */
export function memberFromStatus(api: string, s: NodeStatus): MemberDescription {
  const base = api.replace(/\/+$/, '')
  return {
    org: s.org.name,
    node: s.node.name,
    did: s.org.did,
    api: base,
    ws: `${base.replace(/^http/, 'ws')}/ws`,
    ui: `${base}/ui/`,
    apiPage: `${base}/api`,
    p2p: s.node.p2p,
    key: s.org.key,
  }
}

/**
 * Combines the members' statuses into one description. They must follow one contract on one chain: members that
 * follow different ones are not one network, and comparing them would say nothing.
 */
export function combineStatuses(members: readonly { api: string; status: NodeStatus }[], chainId: number): NetworkDescription {
  const first = members[0]
  if (first === undefined) throw new Error('no member to describe: give the API URL of each member')
  const contractOf = (s: NodeStatus): string => s.multiparty.contract.active.location.address.toLowerCase()
  const contract = contractOf(first.status)
  const other = members.find((m) => contractOf(m.status) !== contract)
  if (other !== undefined) throw new Error(`${other.api} follows BatchPin ${contractOf(other.status)}, ${first.api} follows ${contract}: not one network`)
  const orgs = new Set<string>()
  for (const m of members) {
    if (orgs.has(m.status.org.name)) throw new Error(`${m.api}: org ${m.status.org.name} is named twice`)
    orgs.add(m.status.org.name)
  }
  return {
    chain: { rpc: first.status.chain.rpc, chainId, contract, firstBlock: Math.min(...members.map((m) => m.status.multiparty.contract.active.firstEvent)) },
    ipfs: { api: first.status.ipfs.api, gateway: first.status.ipfs.gateway },
    members: members.map((m) => memberFromStatus(m.api, m.status)),
  }
}

/** Reads each member's status, and the chain id from the RPC URL the first member uses. */
export async function describeMembers(apis: readonly string[]): Promise<NetworkDescription> {
  const members = await Promise.all(apis.map(async (api) => ({ api, status: await memberGet<NodeStatus>({ org: api, api: api.replace(/\/+$/, '') }, '/api/v1/status') })))
  const rpc = members[0]?.status.chain.rpc
  const chainId = rpc === undefined ? undefined : Number(await rpcCall<string>(rpc, 'eth_chainId', []))
  if (rpc !== undefined && !Number.isFinite(chainId)) throw new Error(`the chain at ${rpc} (from ${members[0]!.api}'s status) did not answer eth_chainId`)
  return combineStatuses(members, chainId ?? 0)
}
