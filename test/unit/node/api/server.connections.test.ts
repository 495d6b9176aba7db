import { expect } from 'chai'
import { DEFAULT_REQUEST_LIMITS } from '../../../../node/core/limits.js'
import { readUntil, startLimitsServer, type LimitsServer } from '../../../support/limits-server.js'
import { waitUntil } from '../../../support/wait.js'

/** The API server's connections: a client that pipelines a flood on one of them cannot starve the others. */
describe('API server connections', () => {
  let server: LimitsServer

  before(async () => {
    server = await startLimitsServer({ ...DEFAULT_REQUEST_LIMITS, queuedRequestsPerConnection: 4 })
  })
  after(async () => {
    await server.close()
    expect(server.logs, 'nothing here is a server error').to.deep.equal([])
  })

  it('serves a flood pipelined on one connection one request at a time, and answers another connection meanwhile', async () => {
    const open = server.hold()
    const total = 500
    const held = JSON.stringify({ hold: true })
    const flood = await server.socket()
    const answers = readUntil(flood, (text) => (text.match(/HTTP\/1\.1 400/g) ?? []).length === total)
    flood.write((server.postHead(held.length) + held).repeat(total))
    try {
      await waitUntil('the first request of the flood is held', () => server.holding >= 1, { intervalMs: 10 })
      const other = await server.post(JSON.stringify({ value: 'from another connection' }))
      expect(other).to.include({ status: 400, error: 'INVALID_FIELD: reached' })
      expect(server.holding, 'one request of the flooded connection is being served').to.equal(1)
    } finally {
      open()
    }
    const text = await answers
    expect((text.match(/INVALID_FIELD: reached/g) ?? []).length, 'every pipelined request answered, in turn').to.equal(total)
  })
})
