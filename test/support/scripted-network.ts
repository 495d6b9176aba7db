import { randomUUID } from 'node:crypto'
import { batchPinInterface, type RpcLog } from '../../node/chain/abi.js'
import { uuidsBytes32 } from '../../node/core/hashes.js'
import type { BatchId, TxId } from '../../node/core/ids.js'
import type { MemberDescription, NetworkDescription } from '../../network/description.js'
import { rpcMethod, rpcResult, scriptedEndpoint, type ScriptedReply, type ScriptedRequest, type ScriptedEndpoint } from './scripted-server.js'

/** A member's API as a test scripts it: the JSON answered for a path (its query ignored), or a reply of its own. */
export type MemberRoutes = Record<string, unknown | ((req: ScriptedRequest) => ScriptedReply)>

/**
 * A network of scripted servers, for the modules that read one from outside (network/verify, trace, inspect): each
 * member's API answers what its routes say (404 for any other path), the chain answers `eth_blockNumber` and
 * `eth_getLogs` with the logs given. Nothing runs but loopback HTTP servers, closed by `close`.
 */
export class ScriptedNetwork {
  readonly servers = new Map<string, ScriptedEndpoint>()
  private constructor(
    readonly description: NetworkDescription,
    readonly chain: ScriptedEndpoint,
  ) {}

  static async start(orgs: readonly string[], chain: { head: number; logs: RpcLog[] } = { head: 0, logs: [] }): Promise<ScriptedNetwork> {
    const chainServer = await scriptedEndpoint((r) => {
      const m = rpcMethod(r)
      if (m === 'eth_blockNumber') return rpcResult(r, `0x${chain.head.toString(16)}`)
      if (m === 'eth_getLogs') return rpcResult(r, chain.logs)
      return { status: 200, body: { jsonrpc: '2.0', id: 1, error: { message: `no method ${m}` } } }
    })
    const members: MemberDescription[] = []
    const servers = new Map<string, ScriptedEndpoint>()
    for (const [i, org] of orgs.entries()) {
      const s = await scriptedEndpoint(() => ({ status: 404, body: { error: 'No route' } }))
      servers.set(org, s)
      members.push({ org, node: `node${i}`, did: `did:firefly:org/${org}`, api: s.url, ws: `${s.url.replace('http', 'ws')}/ws`, p2p: 'https://127.0.0.1:1', key: keyOf(org) })
    }
    const d: NetworkDescription = {
      chain: { rpc: chainServer.url, chainId: 1337, contract: '0x' + '11'.repeat(20), firstBlock: 0 },
      ipfs: { api: 'http://127.0.0.1:1', gateway: 'http://127.0.0.1:2' },
      members,
    }
    const net = new ScriptedNetwork(d, chainServer)
    for (const [org, s] of servers) net.servers.set(org, s)
    return net
  }

  /** Sets what `org`'s API answers. */
  routes(org: string, routes: MemberRoutes): void {
    this.servers.get(org)!.answer((req) => {
      const path = req.path.split('?')[0]!
      const route = routes[path]
      if (route === undefined) return { status: 404, body: { error: `No route for ${req.method} ${path}` } }
      return typeof route === 'function' ? (route as (r: ScriptedRequest) => ScriptedReply)(req) : { status: 200, body: route }
    })
  }

  /** Paths each member was asked, by org. */
  asked(org: string): string[] {
    return this.servers.get(org)!.requests.map((r) => r.path.split('?')[0]!)
  }

  async close(): Promise<void> {
    for (const s of this.servers.values()) await s.close()
    await this.chain.close()
  }
}

/** A member's signing key in a scripted network (lowercase, as the chain's logs decode it). */
export const keyOf = (org: string): string => '0x' + Buffer.from(org.padEnd(20, '-')).toString('hex')

/** A BatchPin log as the contract emits it, ABI-encoded by ethers. */
export function batchPinLog(p: { batch: string; signer: string; batchHash: string; block: number; logIndex?: number; contexts?: number; action?: string; payloadRef?: string }): RpcLog {
  const contexts = Array.from({ length: p.contexts ?? 1 }, (_, i) => '0x' + String(i + 1).padStart(64, '0'))
  const { data, topics } = batchPinInterface.encodeEventLog('BatchPin', [
    p.signer,
    1_700_000_000n,
    p.action ?? 'firefly:batch_pin',
    uuidsBytes32(randomUUID() as TxId, p.batch as BatchId),
    '0x' + p.batchHash,
    p.payloadRef ?? '',
    contexts,
  ])
  return { address: '0x' + '11'.repeat(20), topics, data, blockNumber: `0x${p.block.toString(16)}`, transactionHash: '0x' + 'ab'.repeat(32), transactionIndex: '0x0', logIndex: `0x${(p.logIndex ?? 0).toString(16)}` }
}
