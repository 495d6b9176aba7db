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
    // Within what one connection may have waiting (4 + 32); more in one write closes it (below).
    const total = 30
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

/** Caps on the API server's connections, and a connection closed for what it has waiting. */
describe('API server connection caps', () => {
  let server: LimitsServer

  beforeEach(async () => {
    server = await startLimitsServer({ ...DEFAULT_REQUEST_LIMITS, queuedRequestsPerConnection: 4, connections: 4, connectionsPerAddress: 2 })
  })
  afterEach(() => server.close())

  it('answers a connection past connectionsPerAddress 429 at once, naming the knob, and closes it; another address is served', async () => {
    await server.socket()
    await server.socket()
    const third = await server.socket()
    const text = await readUntil(third, () => false)
    expect(text).to.match(/^HTTP\/1\.1 429 /)
    expect(text).to.include('limits.connectionsPerAddress')
    const other = await server.post(JSON.stringify({ value: 1 }), { localAddress: '127.0.0.2' })
    expect(other).to.include({ status: 400, error: 'INVALID_FIELD: reached' })
  })

  it('answers a connection past connections 503 at once, naming the knob, and closes it', async () => {
    for (const from of ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5']) await server.socket(from)
    const fifth = await server.socket('127.0.0.6')
    const text = await readUntil(fifth, () => false)
    expect(text).to.match(/^HTTP\/1\.1 503 /)
    expect(text).to.include('limits.connections)')
    expect(server.logs.join('\n')).to.include('limits.connections)')
  })

  it('closes a connection with a read of pipelined requests behind a held one, and logs it naming the knob', async () => {
    const open = server.hold()
    try {
      const held = JSON.stringify({ hold: true })
      const s = await server.socket()
      const closed = new Promise((r) => s.once('close', r))
      s.write(server.postHead(held.length) + held + 'GET /x HTTP/1.1\r\nHost: a\r\n\r\n'.repeat(2000))
      await closed
      expect(server.logs.join('\n')).to.include('limits.queuedRequestsPerConnection')
      const other = await server.post(JSON.stringify({ value: 1 }))
      expect(other).to.include({ status: 400, error: 'INVALID_FIELD: reached' })
    } finally {
      open()
    }
  })
})
