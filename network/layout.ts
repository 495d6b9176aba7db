import { join, resolve } from 'node:path'

/** Where everything of one network lives inside its state folder. */
export function layout(dir: string) {
  const root = resolve(dir)
  return {
    root,
    networkJson: join(root, 'network.json'),
    pidsJson: join(root, 'pids.json'),
    logs: join(root, 'logs'),
    log: (name: string) => join(root, 'logs', `${name}.log`),
    chainDir: join(root, 'chain'),
    ipfsDir: join(root, 'ipfs'),
    /** Which engine the members' databases are on, and a managed server's credentials (network/startup/database.ts). */
    databaseJson: join(root, 'database.json'),
    /** The network's own PostgreSQL server, when it has one: its cluster in `data`. */
    postgres: { dir: join(root, 'postgres'), data: join(root, 'postgres', 'data') },
    /** What the programs of an installed package keep between starts (code caches, a new member's database). */
    programCache: join(root, 'cache'),
    member: (org: string) => {
      const m = join(root, 'members', org)
      return {
        dir: m,
        config: join(m, 'config.json'),
        signingKey: join(m, 'signing.key'),
        cert: join(m, 'tls', 'cert.pem'),
        key: join(m, 'tls', 'key.pem'),
        data: join(m, 'data'),
      }
    },
  }
}
export type Layout = ReturnType<typeof layout>
