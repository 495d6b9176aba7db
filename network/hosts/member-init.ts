/**
 * `npm run node -- init`: a member's config, signing key and TLS material, for a member that runs on its own host
 * (DESIGN section 10). What the member shares with the others is only what its config names: the chain's RPC URL
 * and contract, the IPFS URLs; its p2p endpoint and certificate reach them through its registration on chain.
 *
 * Written beside the config: `signing.key` (mode 0600), `tls/cert.pem` naming the host in its SAN, `tls/key.pem`
 * (0600), and `data/` at the first start. The config is checked by the node's own parser before this answers, and
 * nothing is left behind when that fails.
 */
import { existsSync, rmSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { isAddress } from 'ethers'
import { isWildcardHost, loadNodeConfig } from '../../node/config.js'
import { bracketed, memberConfig, memberFilePaths, writeMemberFiles } from '../member-files.js'

export interface MemberInitOptions {
  /** The config file to write; the key, TLS material and data folder go beside it. */
  config: string
  org: string
  /** Default `<org>-node`. */
  node?: string
  /** The address (or DNS name) the member's API and p2p endpoint bind and are reached at, and its certificate names. */
  host: string
  /**
   * The name or address the other members reach its p2p endpoint at, when it is not `host` (a host behind NAT, or
   * `host` 0.0.0.0): registered on chain as its endpoint, and named by its certificate.
   */
  publicHost?: string
  /** Default 5000 (FireFly's API port). */
  apiPort?: number
  /** Default 3001 (FireFly's data exchange's p2p port). */
  p2pPort?: number
  chain: { rpc: string; contract: string; firstBlock: number }
  ipfs: { api: string; gateway: string }
  /** Serve the test controls under /admin/v1 (hold, release, drop deliveries...). */
  admin?: boolean
  /** A PostgreSQL database of the member's own (`postgres://user:password@host:port/dbname`); sql.js when absent. */
  databaseUrl?: string
}

export interface InitializedMember {
  config: string
  /** The signing key's address: the account to fund before the member can register and pin. */
  address: string
  api: string
  p2p: string
}

const DEFAULT_API_PORT = 5000
const DEFAULT_P2P_PORT = 3001

export async function initMember(o: MemberInitOptions): Promise<InitializedMember> {
  const config = resolve(o.config)
  if (existsSync(config)) throw new Error(`${config} exists already: this member was initialised; remove it (and its folder) or choose another --config`)
  const files = memberFilePaths(config)
  const taken = Object.values(files).filter((f) => existsSync(f))
  if (taken.length > 0) throw new Error(`${taken.join(', ')} exist already: initialise each member in a folder of its own`)
  const cfg = memberConfig({
    org: o.org,
    node: o.node ?? `${o.org}-node`,
    host: o.host,
    ...(o.publicHost !== undefined ? { publicHost: o.publicHost } : {}),
    apiPort: o.apiPort ?? DEFAULT_API_PORT,
    p2pPort: o.p2pPort ?? DEFAULT_P2P_PORT,
    chain: o.chain,
    ipfs: o.ipfs,
    admin: o.admin ?? false,
    ...(o.databaseUrl !== undefined ? { database: { type: 'postgres', url: o.databaseUrl } } : {}),
  })
  let address: string
  try {
    ;({ address } = await writeMemberFiles(config, cfg, certificateHosts(o)))
    // The node's own checks, so that a config this writes is one the node starts from.
    loadNodeConfig(config)
  } catch (err) {
    for (const f of [config, ...Object.values(files)]) rmSync(f, { force: true })
    throw err
  }
  return { config, address, api: `http://${bracketed(o.host)}:${cfg.api.port}`, p2p: cfg.p2p.endpoint ?? `https://${bracketed(o.host)}:${cfg.p2p.port}` }
}

/** What the certificate names: where peers reach the member, and the address it listens on unless that is every one. */
function certificateHosts(o: MemberInitOptions): string[] {
  return [...new Set([...(o.publicHost !== undefined ? [o.publicHost] : []), ...(isWildcardHost(o.host) ? [] : [o.host])])]
}

export const NODE_INIT_USAGE = `usage: npm run node -- init --config FILE --org NAME --host ADDRESS --chain RPC_URL --contract ADDRESS
         --ipfs API_URL --ipfs-gateway GATEWAY_URL [--node NAME] [--first-block N] [--api-port P] [--p2p-port P]
         [--public-host NAME] [--database-url postgres://...] [--admin]

  --config FILE        the config to write; the signing key, TLS material and data folder go in its folder
  --org NAME           the member's org (its DID is did:firefly:org/NAME), claimed on chain at its first start
  --node NAME          its node's name (default NAME-node)
  --host ADDRESS       the address (or DNS name) its API and p2p endpoint listen on, which its certificate names
  --public-host NAME   the name or address other members reach its p2p endpoint at, when not --host (behind NAT,
                       or --host 0.0.0.0): registered on chain, and named by its certificate
  --chain RPC_URL      the Ethereum JSON-RPC endpoint
  --contract ADDRESS   the BatchPin contract (npm run chain -- deploy prints it)
  --first-block N      the block the contract was deployed in (default 0)
  --ipfs API_URL       the IPFS (Kubo) RPC API; --ipfs-gateway its read-only gateway
  --api-port P         default ${DEFAULT_API_PORT}; --p2p-port P default ${DEFAULT_P2P_PORT}
  --database-url URL   keep its state in this PostgreSQL database of its own (postgres://user:password@host:port/dbname;
                       it must exist); without it, in sql.js under its data folder
  --admin              serve the test controls under /admin/v1 (hold, release, drop deliveries)
`

/** The arguments of `init`, checked; a string says what is wrong with them. */
export function parseInitArgs(argv: string[]): MemberInitOptions | string {
  let values: Record<string, string | boolean | undefined>
  try {
    ;({ values } = parseArgs({
      args: argv,
      options: {
        config: { type: 'string' },
        org: { type: 'string' },
        node: { type: 'string' },
        host: { type: 'string' },
        chain: { type: 'string' },
        contract: { type: 'string' },
        'first-block': { type: 'string' },
        ipfs: { type: 'string' },
        'ipfs-gateway': { type: 'string' },
        'api-port': { type: 'string' },
        'p2p-port': { type: 'string' },
        'public-host': { type: 'string' },
        'database-url': { type: 'string' },
        admin: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }))
  } catch (err) {
    return (err as Error).message
  }
  const str = (k: string): string | undefined => (typeof values[k] === 'string' ? (values[k] as string) : undefined)
  for (const k of ['config', 'org', 'host', 'chain', 'contract', 'ipfs', 'ipfs-gateway']) if (str(k) === undefined) return `--${k} is required`
  const contract = str('contract')!
  if (!isAddress(contract)) return `--contract must be a contract address (0x and 40 hex digits), not ${contract}`
  const whole = (k: string, min: number, max: number): number | string | undefined => {
    const raw = str(k)
    if (raw === undefined) return undefined
    const n = Number(raw)
    return /^\d+$/.test(raw) && n >= min && n <= max ? n : `--${k} must be a whole number from ${min} to ${max}, not ${raw}`
  }
  const firstBlock = whole('first-block', 0, Number.MAX_SAFE_INTEGER)
  const apiPort = whole('api-port', 1, 65535)
  const p2pPort = whole('p2p-port', 1, 65535)
  for (const v of [firstBlock, apiPort, p2pPort]) if (typeof v === 'string') return v
  const host = str('host')!
  const publicHost = str('public-host')
  if (isWildcardHost(host) && publicHost === undefined) return `--host ${host} listens on every address: give --public-host, the name or address other members reach it at`
  return {
    config: str('config')!,
    org: str('org')!,
    ...(str('node') !== undefined ? { node: str('node')! } : {}),
    host,
    ...(publicHost !== undefined ? { publicHost } : {}),
    ...(apiPort !== undefined ? { apiPort: apiPort as number } : {}),
    ...(p2pPort !== undefined ? { p2pPort: p2pPort as number } : {}),
    chain: { rpc: str('chain')!, contract: contract.toLowerCase(), firstBlock: (firstBlock as number | undefined) ?? 0 },
    ipfs: { api: str('ipfs')!, gateway: str('ipfs-gateway')! },
    ...(values.admin === true ? { admin: true } : {}),
    ...(str('database-url') !== undefined ? { databaseUrl: str('database-url')! } : {}),
  }
}
