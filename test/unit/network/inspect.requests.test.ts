import { expect } from 'chai'
import { randomUUID } from 'node:crypto'
import { batchesOf, chainPins, errorText, memberGet, memberRequest, MemberHttpError, pendingMessages, settledEvents } from '../../../network/inspect.js'
import { rpcMethod, rpcResult, scriptedEndpoint, type ScriptedEndpoint } from '../../support/scripted-server.js'
import { batchPinLog, keyOf, ScriptedNetwork } from '../../support/scripted-network.js'

/** Reading members and the chain from outside: failures named, pages followed to the end, pins in chain order. */
describe('network/inspect: requests to a member', () => {
  let server: ScriptedEndpoint

  beforeEach(async () => {
    server = await scriptedEndpoint()
  })

  afterEach(() => server.close())

  async function failure(p: Promise<unknown>): Promise<MemberHttpError> {
    try {
      await p
    } catch (err) {
      expect(err).to.be.instanceOf(MemberHttpError)
      return err as MemberHttpError
    }
    return expect.fail('the request did not fail')
  }

  it('names a member that does not answer in time, and one that refuses the connection', async () => {
    server.answer(() => 'hang')
    const slow = await failure(memberRequest({ org: 'org1', api: server.url }, 'GET', '/api/v1/status', undefined, 200))
    expect(slow.message).to.equal('org1 did not answer GET /api/v1/status within 0.2 s (paused or stuck?)')
    expect(slow.status).to.equal(undefined)
    const url = server.url
    await server.close()
    const refused = await failure(memberGet({ org: 'org1', api: url }, '/api/v1/status'))
    expect(refused.message).to.equal(`org1 is not running (connection refused at ${url})`)
  })

  it('names any other failure by its code or message', async () => {
    // fetch refuses some ports outright ("bad port"), before any connection.
    const e = await failure(memberRequest({ org: 'org1', api: 'http://127.0.0.1:6000' }, 'POST', '/x', { a: 1 }))
    expect(e.message).to.match(/^org1: POST \/x failed: /)
  })

  it('answers a body that is not JSON as text, and a non-200 of a GET as an error with the member\'s words', async () => {
    server.answer(() => ({ status: 200, body: 'plain words' }))
    expect(await memberRequest({ org: 'org1', api: server.url }, 'GET', '/x')).to.deep.equal({ status: 200, body: 'plain words' })
    server.answer(() => ({ status: 200 }))
    expect((await memberRequest({ org: 'org1', api: server.url }, 'GET', '/x')).body).to.equal(undefined)
    server.answer(() => ({ status: 409, body: { error: 'conflict' } }))
    const e = await failure(memberGet({ org: 'org1', api: server.url }, '/x'))
    expect([e.status, e.member, e.message]).to.deep.equal([409, 'org1', 'org1: GET /x answered 409 conflict'])
    server.answer(() => ({ status: 502 }))
    expect((await failure(memberGet({ org: 'org1', api: server.url }, '/x'))).message).to.equal('org1: GET /x answered 502 (no body)')
  })

  it('words any body: its error, a string cut at 300 characters, anything else as JSON', () => {
    expect(errorText({ error: 42 })).to.equal('42')
    expect(errorText('x'.repeat(400))).to.have.length(300)
    expect(errorText({ message: 'm' })).to.equal('{"message":"m"}')
    expect(errorText(undefined)).to.equal('(no body)')
  })

  it('follows pages of a thousand until a short one: events by sequence, messages and batches by skip', async () => {
    const member = { org: 'org1', node: 'node1', did: 'd', api: server.url, ws: '', p2p: '', key: '' }
    server.answer((r) => {
      const u = new URL(r.path, server.url)
      const first = u.searchParams.get('sequence') === '>5' || u.searchParams.get('skip') === '0'
      const page = first ? 1000 : 3
      const base = first ? 6 : 1006
      return { status: 200, body: Array.from({ length: page }, (_, i) => ({ id: `x${base + i}`, sequence: base + i })) }
    })
    const events = await settledEvents(member, 'ns 1', 5)
    expect(events).to.have.length(1003)
    expect(server.requests.map((r) => new URL(r.path, server.url).searchParams.get('sequence'))).to.deep.equal(['>5', '>1005'])
    expect(server.requests[0]!.path).to.match(/^\/api\/v1\/namespaces\/ns%201\/events\?/)
    server.requests.length = 0
    expect(await pendingMessages(member, 'default')).to.have.length(1003)
    expect(await batchesOf(member, 'default')).to.have.length(1003)
    expect(server.requests.map((r) => new URL(r.path, server.url).searchParams.get('skip'))).to.deep.equal(['0', '1000', '0', '1000'])
  })
})

describe('network/inspect: the chain\'s pins', () => {
  let net: ScriptedNetwork | undefined

  afterEach(async () => {
    await net?.close()
    net = undefined
  })

  it('reads the logs ten thousand blocks at a time from the first block, and orders them by block, transaction and log', async () => {
    const [b1, b2, b3] = [randomUUID(), randomUUID(), randomUUID()]
    const log = (batch: string, block: number, tx: number, logIndex: number) => ({ ...batchPinLog({ batch, signer: keyOf('org0'), batchHash: 'a'.repeat(64), block, logIndex }), transactionIndex: `0x${tx}` })
    net = await ScriptedNetwork.start(['org0'])
    net.description.chain.firstBlock = 5
    net.chain.answer((r) => {
      if (rpcMethod(r) === 'eth_blockNumber') return rpcResult(r, '0x4e2a') // 20010
      const [filter] = (r.body as { params: { fromBlock: string }[] }).params
      // The second range holds its logs out of order; the last one answers nothing at all.
      if (filter!.fromBlock === '0x5') return rpcResult(r, [log(b1, 9, 0, 0)])
      if (filter!.fromBlock === '0x2715') return rpcResult(r, [log(b3, 10_010, 1, 0), log(b2, 10_010, 0, 4)])
      return rpcResult(r, null)
    })
    const { pins, head } = await chainPins(net.description)
    expect(head).to.equal(20_010)
    expect(pins.map((p) => p.batch)).to.deep.equal([b1, b2, b3])
    const ranges = net.chain.requests.filter((r) => rpcMethod(r) === 'eth_getLogs').map((r) => (r.body as { params: { fromBlock: string; toBlock: string; topics: string[] }[] }).params[0])
    expect(ranges).to.deep.equal([
      { address: net.description.chain.contract, topics: ranges[0]!.topics, fromBlock: '0x5', toBlock: '0x2714' },
      { address: net.description.chain.contract, topics: ranges[0]!.topics, fromBlock: '0x2715', toBlock: '0x4e24' },
      { address: net.description.chain.contract, topics: ranges[0]!.topics, fromBlock: '0x4e25', toBlock: '0x4e2a' },
    ])
  })
})
