import { expect } from 'chai'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { pinnedByItsKey, settledEvents } from '../../../network/inspect.js'
import { messageView } from '../../../network/verify.js'

describe('network/inspect: which batch of an id is the real one', () => {
  const pins = [
    { batch: 'b1', signer: '0xsquat', batchHash: 'junk' },
    { batch: 'b1', signer: '0xowner', batchHash: 'h1' },
  ]

  it('the batch pinned by its own key with its own hash (key compared in lowercase)', () => {
    expect(pinnedByItsKey(pins, { id: 'b1', key: '0xOWNER', hash: 'h1' })).to.equal(true)
  })

  it('not one whose key pinned another hash, nor one of another key under the id, nor one without a key', () => {
    expect(pinnedByItsKey(pins, { id: 'b1', key: '0xowner', hash: 'h2' })).to.equal(false)
    expect(pinnedByItsKey(pins, { id: 'b1', key: '0xother', hash: 'h1' })).to.equal(false)
    expect(pinnedByItsKey(pins, { id: 'b2', key: '0xowner', hash: 'h1' })).to.equal(false)
    expect(pinnedByItsKey(pins, { id: 'b1', hash: 'h1' })).to.equal(false)
  })
})

describe('network/inspect: settled messages a page at a time', () => {
  it('asks for the digests of what batches carried with the pages verify reads (no request per message)', async () => {
    const asked: string[] = []
    const message = { header: { id: 'm1', type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/org0', namespace: 'default', topics: ['T'], datahash: 'dh' }, hash: 'h1', state: 'confirmed', data: [{ id: 'd1', hash: 'x1', digest: 'g1' }] }
    const server = createServer((req, res) => {
      asked.push(req.url ?? '')
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify([{ id: 'e1', sequence: 1, type: 'message_confirmed', namespace: 'default', reference: 'm1', created: '', message }]))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const [e] = await settledEvents({ org: 'org0', api }, 'default', 0, true)
      expect(asked).to.have.length(1)
      expect(asked[0]).to.contain('fetchreferences=true&fetchdigests=true')
      expect(messageView(e!.message!).data).to.deep.equal([{ id: 'd1', hash: 'x1', digest: 'g1' }])
      await settledEvents({ org: 'org0', api }, 'default')
      expect(asked[1]).not.to.contain('fetchdigests')
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})
