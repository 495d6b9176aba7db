import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { freePort } from '../../network/process.js'
import { createNodeCertificate } from '../../network/tls.js'
import { DEFAULT_PEER_QUOTAS, type NodeConfig } from '../../node/config.js'
import { DEFAULT_REQUEST_LIMITS } from '../../node/core/limits.js'
import { DEFAULT_RETRY } from '../../node/exchange/retry.js'

/** A certificate and key for org0/node0, written under `dir`, as a member's config names them. */
export async function loneNodeTls(dir: string): Promise<{ cert: string; key: string }> {
  const material = await createNodeCertificate('org0', 'node0')
  const tls = { cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') }
  await writeFile(tls.cert, material.cert)
  await writeFile(tls.key, material.key)
  return tls
}

/**
 * The config of a member started alone in one process (org0/node0, on free loopback ports): its chain and IPFS point
 * where nothing listens, which a node rides out (it waits for them quietly), so it starts and serves its API.
 */
export async function loneNodeConfig(dataDir: string, tls: { cert: string; key: string }, change: Partial<NodeConfig> = {}): Promise<NodeConfig> {
  const closed = await freePort()
  const p2pPort = await freePort()
  return {
    org: 'org0',
    node: 'node0',
    signingKey: `0x${'11'.repeat(32)}`,
    chain: { rpc: `http://127.0.0.1:${closed}`, contract: `0x${'00'.repeat(20)}`, firstBlock: 0 },
    ipfs: { api: `http://127.0.0.1:${closed}`, gateway: `http://127.0.0.1:${closed}` },
    api: { host: '127.0.0.1', port: await freePort(), allowedHosts: [], allowedOrigins: [] },
    p2p: { host: '127.0.0.1', port: p2pPort, endpoint: `https://127.0.0.1:${p2pPort}`, ...tls, retry: DEFAULT_RETRY },
    dataDir,
    batch: {},
    limits: DEFAULT_REQUEST_LIMITS,
    quotas: DEFAULT_PEER_QUOTAS,
    database: { type: 'sqljs' },
    admin: false,
    ...change,
  }
}
