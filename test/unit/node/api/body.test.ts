import { expect } from 'chai'
import type { Socket } from 'node:net'
import { DEFAULT_REQUEST_LIMITS, type RequestLimits } from '../../../../node/core/limits.js'
import { readUntil, startLimitsServer, type LimitsServer } from '../../../support/limits-server.js'

/**
 * How a JSON body is charged to the member's budget and timed, over real sockets through the real server: what a
 * client that declares much and sends little holds, what one address may hold, and the deadline of a body that
 * trickles.
 */
const KiB = 1024

/** The budget both suites read bodies against (64 KiB bodies, 256 KiB in flight, 128 KiB per address), with their own timing. */
function bodyLimits(timing: Partial<RequestLimits>): RequestLimits {
  return { ...DEFAULT_REQUEST_LIMITS, jsonBodyBytes: 64 * KiB, inFlightBodyBytes: 256 * KiB, addressBodyBytes: 128 * KiB, ...timing }
}

/** Starts the server before the suite and closes it after, sockets destroyed after each test, no server error logged. */
function serveLimits(limits: RequestLimits): () => LimitsServer {
  let server: LimitsServer | undefined
  before(async () => {
    server = await startLimitsServer(limits)
  })
  afterEach(() => {
    for (const s of server!.sockets.splice(0)) s.destroy()
  })
  after(async () => {
    for (const s of server!.sockets.splice(0)) s.destroy()
    await server!.close()
    expect(server!.logs, 'nothing here is a server error').to.deep.equal([])
  })
  return () => server!
}

/** A connection that declares `declared` bytes and sends the first `sent` of them. */
async function partial(server: LimitsServer, declared: number, sent: number, localAddress?: string): Promise<Socket> {
  const s = await server.socket(localAddress)
  s.write(server.postHead(declared) + '{"value":"'.padEnd(sent, 'a'))
  return s
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 50))

// Timers far beyond what a test takes, even on a loaded machine: these tests are about shares, not deadlines.
describe('reading a JSON body: its share of the budget', () => {
  const limits = bodyLimits({ bodyIdleMs: 30_000, bodyDeadlineMs: 60_000 })
  const serve = serveLimits(limits)
  let server: LimitsServer

  beforeEach(() => {
    server = serve()
  })

  it('charges the bytes that arrived, not the declared length: 32 bodies declaring the largest size leave room for others', async () => {
    const trickling = await Promise.all(Array.from({ length: 32 }, () => partial(server, limits.jsonBodyBytes, 12)))
    await settle()
    // Reserved up front, these 32 would hold 2 MiB of a 256 KiB budget and refuse everyone else.
    const r = await server.post(JSON.stringify({ value: 'y'.repeat(50 * KiB) }))
    expect(r).to.include({ status: 400, error: 'INVALID_FIELD: reached' })
    expect(trickling.filter((s) => s.destroyed), 'the trickling bodies are still being read').to.deep.equal([])
  })

  it("bounds one address's share: past addressBodyBytes its new bodies get 429, other addresses' do not", async () => {
    await partial(server, limits.jsonBodyBytes, 60 * KiB, '127.0.0.2')
    await partial(server, limits.jsonBodyBytes, 60 * KiB, '127.0.0.2')
    await settle()
    const refused = await server.post(JSON.stringify({ value: 'z'.repeat(20 * KiB) }), { localAddress: '127.0.0.2' })
    expect(refused.status).to.equal(429)
    expect(refused.error).to.match(/^TOO_MANY_REQUESTS: requests from 127\.0\.0\.2 already hold \d+ bytes of request bodies being read here; at most 131072 from one address \(limits\.addressBodyBytes\)/)
    // A small body from that address still fits in its share; another address is not held back at all.
    expect((await server.post('{"value":1}', { localAddress: '127.0.0.2' })).status).to.equal(400)
    expect(await server.post(JSON.stringify({ value: 'z'.repeat(50 * KiB) }), { localAddress: '127.0.0.3' })).to.include({ status: 400, error: 'INVALID_FIELD: reached' })
  })

})

// The drip comes every 100 ms against an idle limit twenty times longer, so a loaded machine that delays the drip still
// meets the overall deadline first.
describe('reading a JSON body: its deadline', () => {
  const limits = bodyLimits({ bodyIdleMs: 2_000, bodyDeadlineMs: 900 })
  const serve = serveLimits(limits)
  let server: LimitsServer

  beforeEach(() => {
    server = serve()
  })

  it('answers 408 to a body still trickling at bodyDeadlineMs, closes its connection, and gives its share back', async () => {
    const s = await partial(server, limits.jsonBodyBytes, 60 * KiB, '127.0.0.4')
    const answer = readUntil(s, () => false)
    // One byte per 100 ms: never idle for bodyIdleMs, never done.
    const drip = setInterval(() => s.writable && s.write('a'), 100)
    try {
      const text = await answer
      expect(text).to.match(/^HTTP\/1\.1 408 /)
      expect(text).to.match(/\r\nconnection: close\r\n/i)
      expect(text).to.contain('"error":"REQUEST_TIMEOUT: the request body did not arrive whole within 900 ms (limits.bodyDeadlineMs)"')
    } finally {
      clearInterval(drip)
    }
    // Its 60 KiB are free again: two bodies of that size from the same address fit together.
    await partial(server, limits.jsonBodyBytes, 60 * KiB, '127.0.0.4')
    await settle()
    expect((await server.post(JSON.stringify({ value: 'w'.repeat(60 * KiB) }), { localAddress: '127.0.0.4' })).status).to.equal(400)
  })
})

/**
 * On loopback every client is one address: a client that fills the address's share with bodies and then stalls would
 * keep every other client's body out until the deadline. A stalled body gives way to one that is arriving.
 */
describe('reading a JSON body: stalled bodies give way to arriving ones', () => {
  // Long enough that a loaded machine answers the "not stalled yet" request well before it.
  const limits = bodyLimits({ bodyIdleMs: 10_000, bodyDeadlineMs: 20_000, bodyStalledMs: 700 })
  const serve = serveLimits(limits)
  let server: LimitsServer

  beforeEach(() => {
    server = serve()
  })

  it('evicts bodies that sent nothing for bodyStalledMs when a body needs their share: 408 to them, room for it', async () => {
    const stalled = await Promise.all([0, 1].map(async () => {
      const s = await server.socket('127.0.0.5')
      s.write(server.postHead(limits.jsonBodyBytes) + '{"value":"'.padEnd(60 * KiB, 'a'))
      return { s, answer: readUntil(s, (t) => t.includes('REQUEST_TIMEOUT')) }
    }))
    // Not stalled yet: the address's share is theirs, and a third body is refused.
    await new Promise((r) => setTimeout(r, 30))
    expect((await server.post(JSON.stringify({ value: 'x'.repeat(20 * KiB) }), { localAddress: '127.0.0.5' })).status).to.equal(429)
    await new Promise((r) => setTimeout(r, 2 * limits.bodyStalledMs))
    expect(await server.post(JSON.stringify({ value: 'y'.repeat(20 * KiB) }), { localAddress: '127.0.0.5' })).to.include({ status: 400, error: 'INVALID_FIELD: reached' })
    const first = await stalled[0]!.answer
    expect(first).to.match(/^HTTP\/1\.1 408 /)
    expect(first).to.contain('the request body sent less than 65536 bytes in 700 ms while other bodies needed the budget it held (limits.bodyStalledMs)')
  })
})

