/**
 * A member's files in its own folder, as both the local network (network/startup/members.ts) and `npm run node --
 * init` (network/hosts/member-init.ts) write them: the config, `signing.key`, `tls/cert.pem` and `tls/key.pem` beside
 * it, and `data/` once the node starts. Paths in the config are relative to it, so the folder can move.
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { addressOfKey } from '../node/chain/key-address.js'
import { writeFileAtomic } from '../node/core/atomic-file.js'
import type { NodeConfigFile } from '../node/config.js'
import { SECP256K1_N } from './chain/hd-accounts.js'
import { createNodeCertificate } from './tls.js'

const MEMBER_FILES = { signingKey: 'signing.key', cert: 'tls/cert.pem', key: 'tls/key.pem', data: 'data' } as const

export interface MemberSettings {
  org: string
  node: string
  /** The address its API and p2p endpoint listen on and, unless `publicHost` says otherwise, are reached at. */
  host: string
  /** The name or address the other members reach its p2p endpoint at, when not `host` (NAT, or `host` 0.0.0.0). */
  publicHost?: string
  apiPort: number
  p2pPort: number
  chain: { rpc: string; contract: string; firstBlock: number }
  ipfs: { api: string; gateway: string }
  admin: boolean
  /** Its database engine, as the config's `database` block says it (sql.js when absent; node/config.ts). */
  database?: NodeConfigFile['database']
}

export function memberConfig(s: MemberSettings): NodeConfigFile {
  return {
    org: s.org,
    node: s.node,
    signingKeyFile: MEMBER_FILES.signingKey,
    chain: s.chain,
    ipfs: s.ipfs,
    api: { host: s.host, port: s.apiPort },
    p2p: {
      host: s.host,
      port: s.p2pPort,
      certFile: MEMBER_FILES.cert,
      keyFile: MEMBER_FILES.key,
      ...(s.publicHost !== undefined && s.publicHost !== s.host ? { endpoint: `https://${bracketed(s.publicHost)}:${s.p2pPort}` } : {}),
    },
    dataDir: MEMBER_FILES.data,
    ...(s.admin ? { admin: true } : {}),
    ...(s.database !== undefined ? { database: s.database } : {}),
  }
}

/** A host as it goes in a URL: an IPv6 address in brackets. */
export const bracketed = (host: string): string => (host.includes(':') && !host.startsWith('[') ? `[${host}]` : host)

/** The files beside `config` a member's config names. */
export function memberFilePaths(config: string): { signingKey: string; cert: string; key: string } {
  const dir = dirname(config)
  return { signingKey: join(dir, MEMBER_FILES.signingKey), cert: join(dir, MEMBER_FILES.cert), key: join(dir, MEMBER_FILES.key) }
}

/**
 * Writes a new signing key, TLS material for `tlsHosts`, then the config (last: it marks the member as created).
 * Answers the signing key's address.
 */
export async function writeMemberFiles(config: string, cfg: NodeConfigFile, tlsHosts: readonly string[]): Promise<{ address: string }> {
  const files = memberFilePaths(config)
  mkdirSync(dirname(files.cert), { recursive: true })
  const tls = await createNodeCertificate(cfg.org, cfg.node, { hosts: tlsHosts })
  const signingKey = randomPrivateKey()
  // Durable before the config, and written in parallel with every other new member's (fsyncs that each held up the
  // local network's start by ~10 ms, one after the other, when written synchronously).
  await Promise.all([
    writeFileAtomic(files.signingKey, `${signingKey}\n`, { mode: 0o600 }),
    writeFileAtomic(files.cert, tls.cert),
    writeFileAtomic(files.key, tls.key, { mode: 0o600 }),
  ])
  // A PostgreSQL URL carries the server's password: the config is then readable by its owner alone, as the keys are.
  await writeFileAtomic(config, `${JSON.stringify(cfg, null, 2)}\n`, cfg.database?.url !== undefined ? { mode: 0o600 } : {})
  return { address: addressOfKey(signingKey) }
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
