import { expect } from 'chai'
import type { Socket } from 'node:net'
import { DEFAULT_REQUEST_LIMITS, type RequestLimits } from '../../../../node/core/limits.js'
import { DATA_PATH, startLimitsServer, type LimitsServer } from '../../../support/limits-server.js'
import { waitUntil } from '../../../support/wait.js'

/**
 * The member's request limits over real HTTP, through the real server and routes: each refusal is a 4xx with the
 * JSON error body naming the limit. The uploader behind the routes only says it was reached, so a body read whole
 * answers 400 "reached" and a refusal shows as anything else.
 */
describe('request limits', () => {
  const limits: RequestLimits = {
    ...DEFAULT_REQUEST_LIMITS,
    jsonBodyBytes: 64 * 1024,
    headerBytes: 4096,
    urlBytes: 1024,
    inFlightBodyBytes: 100 * 1024,
    bodyIdleMs: 300,
    uploadBytes: 1024,
  }
  let server: LimitsServer

  before(async () => {
    server = await startLimitsServer(limits)
  })
  after(async () => {
    await server.close()
    expect(server.logs, 'nothing here is a server error').to.deep.equal([])
  })

  const call = (opts: { path?: string; headers?: Record<string, string>; body?: string | Buffer }): ReturnType<LimitsServer['post']> =>
    server.post(opts.body ?? '', { ...(opts.headers ? { headers: opts.headers } : {}), ...(opts.path ? { path: opts.path } : {}) })

  /** Opens a request that declares `declared` bytes, sends `sent` of them and stops; answers the socket. */
  async function stalled(declared: number, sent: number): Promise<Socket> {
    const s = await server.socket()
    s.write(server.postHead(declared) + '{"value":"'.padEnd(sent, 'a'))
    // Let the server take the body's share of the budget before the test goes on.
    await new Promise((r) => setTimeout(r, 50))
    return s
  }

  it('reads a body within the limits', async () => {
    const r = await call({ body: JSON.stringify({ value: 'x'.repeat(1000) }) })
    expect(r).to.include({ status: 400, error: 'INVALID_FIELD: reached' })
  })

  it('refuses a declared body over jsonBodyBytes before reading it, naming the limit', async () => {
    const r = await call({ body: JSON.stringify({ value: 'x'.repeat(70 * 1024) }) })
    expect(r.status).to.equal(413)
    expect(r.error).to.equal(`PAYLOAD_TOO_LARGE: the body is ${70 * 1024 + 12} bytes; this member accepts at most ${64 * 1024} bytes (limits.jsonBodyBytes)`)
  })

  it('refuses a chunked body once it passes jsonBodyBytes', async () => {
    const r = await call({ headers: { 'transfer-encoding': 'chunked' }, body: JSON.stringify({ value: 'x'.repeat(70 * 1024) }) })
    expect(r.status).to.equal(413)
    expect(r.error).to.match(/\(limits.jsonBodyBytes\)$/)
  })

  it('refuses a request head over headerBytes with a 431 and the JSON body', async () => {
    const r = await call({ headers: { 'x-big': 'h'.repeat(5000) }, body: '{}' })
    expect(r.status).to.equal(431)
    expect(r.error).to.match(/over 4096 bytes.*\(limits.headerBytes\)$/)
  })

  it('refuses a request target over urlBytes with a 414', async () => {
    const r = await call({ path: `${DATA_PATH}?x=${'u'.repeat(1100)}`, body: '{}' })
    expect(r.status).to.equal(414)
    expect(r.error).to.match(/^URI_TOO_LONG: the request target is \d+ bytes; this member accepts at most 1024 bytes \(limits.urlBytes\)$/)
  })

  it('holds at most inFlightBodyBytes of unfinished bodies: past it new bodies get 429, and the budget returns when they end', async () => {
    // A body holds what has arrived of it, not what it declares.
    const first = await stalled(60 * 1024, 60 * 1024 - 10)
    const refused = await call({ body: JSON.stringify({ value: 'y'.repeat(50 * 1024) }) })
    expect(refused.status).to.equal(429)
    expect(refused.error).to.match(/^TOO_MANY_REQUESTS: this member is already reading \d+ bytes of request bodies; at most 102400 at once \(limits.inFlightBodyBytes\)/)
    // A small body still fits beside the stalled one.
    expect((await call({ body: '{"value":1}' })).status).to.equal(400)
    first.destroy()
    await new Promise((r) => setTimeout(r, 50))
    const later = await call({ body: JSON.stringify({ value: 'y'.repeat(50 * 1024) }) })
    expect(later).to.include({ status: 400, error: 'INVALID_FIELD: reached' })
  })

  it('keeps a body counted while its handler holds it, even after the client has hung up', async () => {
    const open = server.hold()
    const body = JSON.stringify({ hold: true, pad: 'p'.repeat(60 * 1024) })
    const s = await server.socket()
    s.end(server.postHead(body.length) + body)
    await waitUntil('the body reaches its handler', () => server.holding > 0, { intervalMs: 10, timeoutMs: 5000 })
    s.destroy()
    await new Promise((r) => setTimeout(r, 50))
    expect((await call({ body: JSON.stringify({ value: 'y'.repeat(50 * 1024) }) })).status, 'the held body still counts').to.equal(429)
    open()
    await new Promise((r) => setTimeout(r, 50))
    expect(await call({ body: JSON.stringify({ value: 'y'.repeat(50 * 1024) }) })).to.include({ status: 400, error: 'INVALID_FIELD: reached' })
  })

  it('abandons a body that stops arriving for bodyIdleMs, closing its connection and giving back its budget', async () => {
    const s = await stalled(60 * 1024, 100)
    expect(s.destroyed, 'closed before bodyIdleMs').to.equal(false)
    await new Promise<void>((resolve) => s.once('close', () => resolve()))
    const r = await call({ body: JSON.stringify({ value: 'z'.repeat(60 * 1024) }) })
    expect(r).to.include({ status: 400, error: 'INVALID_FIELD: reached' })
  })

  it('refuses an upload declared larger than uploadBytes and its fields could be, before reading it', async () => {
    const boundary = 'b0undary'
    const r = await call({
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(64 * 1024 * 1024) },
      body: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\n\r\nabc\r\n--${boundary}--\r\n`,
    }).catch((err: Error) => ({ status: 0, error: err.message, headers: {} }))
    expect(r.status).to.equal(413)
    expect(r.error).to.match(/\(limits.uploadBytes\)$/)
  })
})
