import { expect } from 'chai'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { carriedOf, readCarried } from '../../../network/verify-carried.js'
import { compare, messageKey, type MemberView, type MessageView } from '../../../network/verify.js'
import type { ApiData } from '../../../network/inspect.js'

const item = (over: Partial<ApiData> = {}): ApiData => ({ id: 'd1', hash: 'x1', validator: 'json', created: '2026-01-01T00:00:00Z', ...over })

function message(id: string, type = 'broadcast'): MessageView {
  return { id, namespace: 'default', type, txtype: 'batch_pin', author: 'did:firefly:org/org0', topics: ['T'], batch: 'b1', hash: `h-${id}`, datahash: `dh-${id}`, data: [{ id: 'd1', hash: 'x1' }], state: 'confirmed' }
}

function member(org: string, msgs: MessageView[]): MemberView {
  return { org, node: org, did: `did:firefly:org/${org}`, settled: msgs.map((m, i) => ({ id: messageKey(m.id, m.hash), outcome: 'confirmed', sequence: i + 1 })), messages: new Map(msgs.map((m) => [messageKey(m.id, m.hash), m])) }
}

/**
 * What verify compares of a message's data beyond ids and hashes: the fields its batch carried with each item, read
 * from each member's `GET messages/{id}/data?hash=`.
 */
describe('network verify: the fields batches carried with data items', () => {
  let server: Server
  let api: string
  const asked: string[] = []
  let answer: ApiData[] = []

  before(async () => {
    server = createServer((req, res) => {
      asked.push(req.url ?? '')
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(answer))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it('describes validator, creation time, datatype and blob; a private message’s blob reference is left out', () => {
    const blob = { hash: 'b', size: 3, name: 'a.bin', public: 'QmX' }
    expect(carriedOf(item({ datatype: { name: 'order', version: '1' }, blob }), true)).to.equal('validator json, created 2026-01-01T00:00:00Z datatype order/1 blob "a.bin" 3 QmX')
    expect(carriedOf(item({ blob }), false)).to.equal('validator json, created 2026-01-01T00:00:00Z blob "a.bin" 3')
  })

  it('reads each settled message’s data by id and hash, and reports members holding different carried fields', async () => {
    answer = [item()]
    const [plain, other] = [member('org0', [message('m1')]), member('org1', [message('m1')])]
    await readCarried({ org: 'org0', api }, plain)
    answer = [item({ datatype: { name: 'nosuch', version: '1' } })]
    await readCarried({ org: 'org1', api }, other)
    expect(asked).to.deep.equal(['/api/v1/namespaces/default/messages/m1/data?hash=h-m1', '/api/v1/namespaces/default/messages/m1/data?hash=h-m1'])
    const input = { pins: [{ batch: 'b1', block: 1, logIndex: 0 }], manifests: new Map([['b1', [messageKey('m1', 'h-m1')]]]), groups: new Map(), members: [plain, other] }
    const r = compare(input)
    expect(r.differences.map((d) => [d.kind, d.message])).to.deep.equal([['hash', 'm1']])
    expect(r.differences[0]!.detail).to.contain('datatype nosuch/1')
    // The same fields everywhere: no difference.
    expect(compare({ ...input, members: [plain, { ...plain, org: 'org1' }] }).differences).to.deep.equal([])
  })
})
