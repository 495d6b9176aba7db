import { expect } from 'chai'
import http from 'node:http'
import { connect, type Socket } from 'node:net'
import { startApiServer, type ApiServer } from '../../../../node/api/server.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { DEFAULT_REQUEST_LIMITS, type RequestLimits } from '../../../../node/core/limits.js'
import type { NodeServices } from '../../../../node/services.js'
import { freePort } from '../../../../network/process.js'

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
  let api: ApiServer
  let port: number
  const logs: string[] = []
  const sockets: Socket[] = []

  /** While set, a value `{"hold": true}` keeps its handler running until it is opened. */
  let gate: { promise: Promise<void>; open(): void } | undefined
  let holding = 0

  before(async () => {
    const reached = (): never => {
      throw new ParleyError('INVALID_FIELD', 'reached')
    }
    const uploadValue = async (_ns: string, body: { get(k: string): { raw: string } | undefined }): Promise<never> => {
      if (body.get('hold') && gate) {
        holding++
        await gate.promise
      }
      return reached()
    }
    const services = { config: { limits }, uploader: { uploadValue, uploadBlob: reached } } as unknown as NodeServices
    port = await freePort()
    api = await startApiServer({ host: '127.0.0.1', port, services, log: (l) => logs.push(l) })
  })
  after(async () => {
    for (const s of sockets) s.destroy()
    await api.close()
    expect(logs, 'nothing here is a server error').to.deep.equal([])
  })

  const DATA = '/api/v1/namespaces/default/data'

  function call(opts: { path?: string; headers?: Record<string, string>; body?: string | Buffer }): Promise<{ status: number; error: string; headers: http.IncomingHttpHeaders }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, agent: false, method: 'POST', path: opts.path ?? DATA, headers: { 'content-type': 'application/json', ...opts.headers } }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          resolve({ status: res.statusCode ?? 0, error: (JSON.parse(text) as { error: string }).error, headers: res.headers })
        })
      })
      req.on('error', reject)
      req.end(opts.body)
    })
  }

  /** Opens a request that declares `declared` bytes, sends `sent` of them and stops; answers the socket. */
  async function stalled(declared: number, sent: number): Promise<Socket> {
    const s = connect(port, '127.0.0.1')
    sockets.push(s)
    await new Promise((r) => s.once('connect', r))
    s.write(`POST ${DATA} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n${'{"value":"'.padEnd(sent, 'a')}`)
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
    const r = await call({ path: `${DATA}?x=${'u'.repeat(1100)}`, body: '{}' })
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
    let open!: () => void
    gate = { promise: new Promise<void>((r) => (open = r)), open: () => open() }
    const body = JSON.stringify({ hold: true, pad: 'p'.repeat(60 * 1024) })
    const s = connect(port, '127.0.0.1')
    sockets.push(s)
    await new Promise((r) => s.once('connect', r))
    s.end(`POST ${DATA} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
    const deadline = Date.now() + 5000
    while (holding === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    s.destroy()
    await new Promise((r) => setTimeout(r, 50))
    expect((await call({ body: JSON.stringify({ value: 'y'.repeat(50 * 1024) }) })).status, 'the held body still counts').to.equal(429)
    gate.open()
    gate = undefined
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
