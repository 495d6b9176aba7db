import { expect } from 'chai'
import { combineStatuses, describeMembers, memberFromStatus } from '../../../../network/hosts/describe.js'
import { rpcMethod, rpcResult, scriptedEndpoint } from '../../../support/scripted-server.js'
import type { NodeStatus } from '../../../../node/services.js'

describe('network/hosts/describe: a network described from its members\' status', () => {
  const status = (org: string, host: string, contract = '0xAbC0000000000000000000000000000000000001', firstEvent = 1): NodeStatus =>
    ({
      org: { name: org, did: `did:firefly:org/${org}`, key: `0x${org.padStart(40, '0')}`, registered: true },
      node: { name: `${org}-node`, did: `did:firefly:node/${org}-node`, registered: true, p2p: `https://${host}:3001` },
      chain: { connected: true, rpc: 'http://chain.example:8545', contract, lastProcessedBlock: 5 },
      ipfs: { connected: true, api: 'http://ipfs.example:5001', gateway: 'http://ipfs.example:8080' },
      multiparty: { enabled: true, contract: { active: { index: 0, location: { address: contract }, firstEvent } } },
    }) as unknown as NodeStatus

  it('each member as network.json lists it, at the API URL it was reached at', () => {
    expect(memberFromStatus('http://127.0.0.2:5000/', status('org2', '127.0.0.2'))).to.deep.equal({
      org: 'org2',
      node: 'org2-node',
      did: 'did:firefly:org/org2',
      api: 'http://127.0.0.2:5000',
      ws: 'ws://127.0.0.2:5000/ws',
      ui: 'http://127.0.0.2:5000/ui/',
      apiPage: 'http://127.0.0.2:5000/api',
      p2p: 'https://127.0.0.2:3001',
      key: `0x${'org2'.padStart(40, '0')}`,
    })
  })

  it('the chain and IPFS the members use, the contract in lower case, from the earliest first block', () => {
    const d = combineStatuses([{ api: 'http://127.0.0.2:5000', status: status('org2', '127.0.0.2', undefined, 7) }, { api: 'http://127.0.0.3:5000', status: status('org3', '127.0.0.3', undefined, 3) }], 31337)
    expect(d.chain).to.deep.equal({ rpc: 'http://chain.example:8545', chainId: 31337, contract: '0xabc0000000000000000000000000000000000001', firstBlock: 3 })
    expect(d.ipfs).to.deep.equal({ api: 'http://ipfs.example:5001', gateway: 'http://ipfs.example:8080' })
    expect(d.members.map((m) => m.org)).to.deep.equal(['org2', 'org3'])
  })

  it('refuses members of different contracts, an org named twice, and no member at all', () => {
    expect(() => combineStatuses([{ api: 'a', status: status('org2', 'h') }, { api: 'b', status: status('org3', 'h', '0x0000000000000000000000000000000000000002') }], 1)).to.throw(/b follows BatchPin 0x0+2, a follows 0xabc0+1: not one network/)
    expect(() => combineStatuses([{ api: 'a', status: status('org2', 'h') }, { api: 'b', status: status('org2', 'h') }], 1)).to.throw(/b: org org2 is named twice/)
    expect(() => combineStatuses([], 1)).to.throw(/no member to describe/)
  })

  it('reads each member\'s status and the chain id from the chain the first one uses, and names a chain that does not answer', async () => {
    const chain = await scriptedEndpoint((r) => (rpcMethod(r) === 'eth_chainId' ? rpcResult(r, '0x7a69') : rpcResult(r, null)))
    const withChain = (org: string): NodeStatus => ({ ...status(org, '127.0.0.1'), chain: { ...status(org, '127.0.0.1').chain, rpc: chain.url } }) as NodeStatus
    const members = await Promise.all(['org2', 'org3'].map((org) => scriptedEndpoint((r) => (r.path === '/api/v1/status' ? { status: 200, body: withChain(org) } : { status: 404 }))))
    try {
      const d = await describeMembers(members.map((m) => `${m.url}/`))
      expect(d.chain.chainId).to.equal(31337)
      expect(d.members.map((m) => [m.org, m.api])).to.deep.equal(members.map((m, i) => [`org${i + 2}`, m.url]))
      chain.answer(() => ({ status: 503, body: 'starting' }))
      try {
        await describeMembers([members[0]!.url])
        expect.fail('described a network whose chain does not answer')
      } catch (err) {
        expect((err as Error).message).to.equal(`the chain at ${chain.url} (from ${members[0]!.url}'s status) did not answer eth_chainId`)
      }
    } finally {
      for (const s of [chain, ...members]) await s.close()
    }
  })
})

