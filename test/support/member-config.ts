import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { NodeConfigFile } from '../../node/config.js'

/**
 * A member's folder as `npm run node -- init` leaves it, for commands that read a member without running it (moving
 * its database): config.json naming endpoints nothing listens on, and a signing key. Answers the config's path.
 */
export function writeMemberConfig(dir: string, database?: NodeConfigFile['database']): string {
  const cfg: NodeConfigFile = {
    org: 'org1',
    node: 'node1',
    signingKeyFile: 'signing.key',
    chain: { rpc: 'http://127.0.0.1:1', contract: '0x' + '11'.repeat(20), firstBlock: 0 },
    ipfs: { api: 'http://127.0.0.1:2', gateway: 'http://127.0.0.1:3' },
    api: { port: 4 },
    p2p: { port: 5, certFile: 'cert.pem', keyFile: 'key.pem' },
    dataDir: 'data',
    ...(database ? { database } : {}),
  }
  const file = join(dir, 'config.json')
  writeFileSync(join(dir, 'signing.key'), `0x${'11'.repeat(32)}\n`)
  writeFileSync(file, JSON.stringify(cfg, null, 2))
  return file
}
