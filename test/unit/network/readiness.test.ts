import { expect } from 'chai'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { bytesUnder, readyTimeoutMs, REPLAY_BYTES_PER_SECOND, seesEveryMember } from '../../../network/readiness.js'

describe('readiness wait', () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-readiness-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('is the base wait for a process with nothing to replay (a new member, a folder not created yet)', () => {
    expect(readyTimeoutMs(60_000, [join(dir, 'missing')])).to.equal(60_000)
  })

  it('grows with the state a process replays at start-up, counted through sub-folders', () => {
    mkdirSync(join(dir, 'db', 'sub'), { recursive: true })
    writeFileSync(join(dir, 'db', 'snapshot.sqlite'), Buffer.alloc(REPLAY_BYTES_PER_SECOND))
    writeFileSync(join(dir, 'db', 'sub', 'journal'), Buffer.alloc(REPLAY_BYTES_PER_SECOND / 2))
    expect(bytesUnder(join(dir, 'db'))).to.equal(REPLAY_BYTES_PER_SECOND * 1.5)
    expect(readyTimeoutMs(60_000, [join(dir, 'db')])).to.equal(61_500)
  })
})

describe('a member seeing every member', () => {
  const members = [0, 1, 2].map((i) => ({ did: `did:firefly:org/org${i}`, node: `node${i}` }))
  let nodes: string[] = []
  let orgs: string[] = []
  const asked: string[] = []
  let api = ''
  const server = createServer((req, res) => {
    asked.push(req.url ?? '')
    const url = new URL(req.url ?? '/', 'http://x')
    const all = url.pathname.endsWith('/nodes') ? nodes.map((n) => `did:firefly:node/${n}`) : orgs.map((o) => `did:firefly:org/${o}`)
    const skip = Number(url.searchParams.get('skip') ?? 0)
    const limit = Number(url.searchParams.get('limit') ?? 1000)
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(all.slice(skip, skip + limit).map((did) => ({ did }))))
  })
  before(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(() => new Promise<void>((r) => server.close(() => r())))
  beforeEach(() => void asked.splice(0))

  it('asks for one node only while the member holds fewer nodes than there are members', async () => {
    nodes = ['node0', 'node1']
    orgs = ['org0', 'org1', 'org2']
    expect(await seesEveryMember(api, members)).to.equal(false)
    expect(asked).to.deep.equal(['/api/v1/network/nodes?limit=1&skip=2'])
  })

  it('then checks every node and org by its DID', async () => {
    nodes = ['node0', 'node1', 'node2']
    expect(await seesEveryMember(api, members)).to.equal(true)
    expect(asked).to.deep.equal(['/api/v1/network/nodes?limit=1&skip=2', '/api/v1/network/nodes?limit=1000', '/api/v1/network/organizations?limit=1000'])
    // As many nodes, one of them another's: not yet.
    nodes = ['node0', 'node1', 'nodeX']
    expect(await seesEveryMember(api, members)).to.equal(false)
    nodes = ['node0', 'node1', 'node2']
    orgs = ['org0', 'org1']
    expect(await seesEveryMember(api, members)).to.equal(false)
  })
})
