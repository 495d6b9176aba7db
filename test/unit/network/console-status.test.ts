import { expect } from 'chai'
import { formatTable } from '../../../network/console-status.js'
import type { MemberDescription, NetworkDescription } from '../../../network/description.js'

const member = (org: string, port: number, urls: Partial<MemberDescription> = {}): MemberDescription => ({
  org,
  node: `${org}-node`,
  did: `did:firefly:org/${org}`,
  api: `http://127.0.0.1:${port}`,
  ws: `ws://127.0.0.1:${port}/ws`,
  p2p: `https://127.0.0.1:${port + 1}`,
  key: '0x00000000000000000000000000000000000000aa',
  ...urls,
})

/** The table `network:up` prints once the network is ready: each member's URLs, its API page among them. */
describe('network: the start-up table', () => {
  const d: NetworkDescription = {
    chain: { rpc: 'http://127.0.0.1:8545', chainId: 31337, contract: '0x00000000000000000000000000000000000000bb', firstBlock: 3 },
    ipfs: { api: 'http://127.0.0.1:5001', gateway: 'http://127.0.0.1:8080' },
    members: [member('org0', 5110, { ui: 'http://127.0.0.1:5110/ui/', apiPage: 'http://127.0.0.1:5110/api' }), member('org1', 5120)],
  }

  it("prints each member's API page (OpenAPI) beside its API, console and event URLs, as FireFly's CLI prints Swagger UI", () => {
    const lines = formatTable(d).split('\n')
    const header = lines.find((l) => l.startsWith('member'))!
    expect(header.split(/\s{2,}/)).to.deep.equal(['member', 'API', 'API page (OpenAPI)', 'console', 'events', 'p2p', 'key'])
    const row = (org: string): string[] => lines.find((l) => l.startsWith(`${org}/`))!.split(/\s{2,}/)
    expect(row('org0').slice(0, 4)).to.deep.equal(['org0/org0-node', 'http://127.0.0.1:5110', 'http://127.0.0.1:5110/api', 'http://127.0.0.1:5110/ui/'])
    // A network.json written before the page existed names no apiPage: the member's API serves it all the same.
    expect(row('org1').slice(2, 4)).to.deep.equal(['http://127.0.0.1:5120/api', 'http://127.0.0.1:5120/ui/'])
  })

  it("names the network's PostgreSQL server on its own line, and nothing of a database on sql.js", () => {
    const onPostgres: NetworkDescription = { ...d, database: { engine: 'postgres', managed: true, server: 'postgres://parley@127.0.0.1:27820/' } }
    expect(formatTable(onPostgres).split('\n')[2]).to.equal("db     PostgreSQL postgres://parley@127.0.0.1:27820/ (data in the state folder's postgres/), a database per member")
    expect(formatTable({ ...d, database: { engine: 'sqljs' } })).to.equal(formatTable(d))
  })
})
