import { expect } from 'chai'
import { formatTable, LiveStatus } from '../../../network/console-status.js'
import type { MemberDescription, NetworkDescription } from '../../../network/description.js'
import { ScriptedNetwork } from '../../support/scripted-network.js'

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

/** The live status `network:up` keeps in the foreground, read from scripted members. */
describe('network: the live status', () => {
  let net: ScriptedNetwork

  before(async () => {
    net = await ScriptedNetwork.start(['org0', 'org1', 'org2', 'org3'])
    net.routes('org0', { '/api/v1/status': { chain: { connected: true, lastProcessedBlock: 3, headBlock: 5 }, ipfs: { connected: true } } })
    net.routes('org1', { '/api/v1/status': { chain: { connected: false }, ipfs: { connected: false } } })
    net.routes('org2', { '/api/v1/status': { chain: { connected: true } } })
    net.routes('org3', { '/api/v1/status': () => ({ status: 200, body: 'not json' }) })
  })

  after(() => net.close())

  /** The first render's writes to an output that is a terminal or not. */
  async function firstRender(isTTY: boolean, paused: (org: string) => boolean): Promise<string[]> {
    const writes: string[] = []
    let rendered: () => void = () => {}
    const done = new Promise<void>((resolve) => (rendered = resolve))
    const out = {
      isTTY,
      write: (text: string) => {
        writes.push(text)
        if (writes.length === 2) rendered()
        return true
      },
    }
    const live = new LiveStatus(net.description, out as unknown as NodeJS.WriteStream, paused)
    live.start()
    await done
    live.stop()
    return writes
  }

  it('prints each member\'s chain and IPFS state, a paused one as paused, one that answers oddly as down', async () => {
    const writes = await firstRender(true, (org) => org === 'org2')
    expect(writes[0]).to.equal('\nlive status (Ctrl-C stops the network):\n')
    expect(writes[1]).to.equal(
      [
        '  org0     up    chain ok, block 3/5, ipfs ok',
        '  org1     up    chain DOWN, ipfs DOWN',
        '  org2     PAUSED (npm run network -- resume org2)',
        `  org3     DOWN  (no answer from ${net.description.members[3]!.api})`,
      ].join('\n') + '\n',
    )
  })

  it('stamps each status with the time where the output is no terminal', async () => {
    const writes = await firstRender(false, () => false)
    expect(writes[1]).to.match(/^\d{4}-\d\d-\d\dT[\d:.]+Z\n {2}org0 {5}up {4}chain ok, block 3\/5, ipfs ok\n/)
    expect(writes[1]).to.contain('  org2     up    chain ok, block ?/?, ipfs DOWN\n')
  })
})

