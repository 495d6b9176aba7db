import { expect } from 'chai'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Http1Pool, parseResponse } from '../../../../scripts/bench/http1-client.js'

/** A real node:http server on a free loopback port, closed after each test. */
async function serve(handler: http.RequestListener, tune?: (s: http.Server) => void): Promise<{ server: http.Server; port: number; connections: () => number }> {
  const server = http.createServer(handler)
  tune?.(server)
  let opened = 0
  server.on('connection', () => opened++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, port: (server.address() as AddressInfo).port, connections: () => opened }
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
  })
}

describe('bench: the lean HTTP/1.1 client', function () {
  const servers: http.Server[] = []
  const pools: Http1Pool[] = []
  afterEach(async function () {
    for (const p of pools.splice(0)) p.destroy()
    for (const s of servers.splice(0)) {
      s.closeAllConnections()
      await new Promise((resolve) => s.close(resolve))
    }
  })
  const pool = (port: number, max = 8): Http1Pool => {
    const p = new Http1Pool('127.0.0.1', port, max)
    pools.push(p)
    return p
  }
  const soon = (ms = 5000): number => Date.now() + ms

  it('sends a JSON body and reads a content-length answer, reusing one connection', async function () {
    const s = await serve(async (req, res) => {
      const body = await readBody(req)
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ method: req.method, url: req.url, type: req.headers['content-type'], got: JSON.parse(body) as unknown }))
    })
    servers.push(s.server)
    const p = pool(s.port)
    for (let i = 0; i < 3; i++) {
      const res = await p.request('POST', `/x?i=${i}`, JSON.stringify({ i, text: 'é✓' }), soon())
      expect(res.status).to.equal(200)
      expect(JSON.parse(res.body.toString('utf8'))).to.deep.equal({ method: 'POST', url: `/x?i=${i}`, type: 'application/json', got: { i, text: 'é✓' } })
    }
    expect(s.connections()).to.equal(1)
  })

  it('reads a chunked answer, and an empty 204', async function () {
    const s = await serve((req, res) => {
      if (req.url === '/none') {
        res.statusCode = 204
        res.end()
        return
      }
      res.write('first,')
      setTimeout(() => res.end('second'), 20)
    })
    servers.push(s.server)
    const p = pool(s.port)
    const res = await p.request('GET', '/chunks', undefined, soon())
    expect(res.body.toString()).to.equal('first,second')
    expect((await p.request('GET', '/none', undefined, soon())).status).to.equal(204)
    expect((await p.request('GET', '/chunks', undefined, soon())).body.toString()).to.equal('first,second')
  })

  it('opens a new connection after an answer that closes its own', async function () {
    const s = await serve((_req, res) => {
      res.setHeader('connection', 'close')
      res.end('bye')
    })
    servers.push(s.server)
    const p = pool(s.port)
    expect((await p.request('GET', '/', undefined, soon())).body.toString()).to.equal('bye')
    expect((await p.request('GET', '/', undefined, soon())).body.toString()).to.equal('bye')
    expect(s.connections()).to.equal(2)
  })

  it('sends a request again on a fresh connection when the server dropped the idle one as it went out', async function () {
    let requests = 0
    const s = await serve((_req, res) => {
      requests++
      res.end('ok')
    })
    servers.push(s.server)
    const p = pool(s.port)
    expect((await p.request('GET', '/', undefined, soon())).body.toString()).to.equal('ok')
    // Drop the server's side of the idle connection: the client learns it only when it writes on it.
    s.server.closeIdleConnections()
    expect((await p.request('GET', '/', undefined, soon())).body.toString()).to.equal('ok')
    expect(requests).to.equal(2)
  })

  it('keeps to maxSockets connections, queueing the rest', async function () {
    let inFlight = 0
    let most = 0
    const s = await serve((_req, res) => {
      inFlight++
      most = Math.max(most, inFlight)
      setTimeout(() => {
        inFlight--
        res.end('done')
      }, 10)
    })
    servers.push(s.server)
    const p = pool(s.port, 2)
    const all = await Promise.all(Array.from({ length: 10 }, () => p.request('GET', '/', undefined, soon())))
    expect(all.map((r) => r.body.toString())).to.deep.equal(new Array(10).fill('done'))
    expect(most).to.equal(2)
    expect(s.connections()).to.equal(2)
  })

  it('rejects at its deadline, and the pool goes on', async function () {
    const s = await serve((req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('late'), 2000).unref()
      else res.end('fast')
    })
    servers.push(s.server)
    const p = pool(s.port, 1)
    const err = await p.request('GET', '/slow', undefined, soon(100)).then(
      () => undefined,
      (e: unknown) => e as Error,
    )
    expect(err?.message).to.contain('timed out')
    expect((await p.request('GET', '/fast', undefined, soon())).body.toString()).to.equal('fast')
  })

  it('never sends a request whose deadline passed while it queued for a connection', async function () {
    const seen: string[] = []
    const s = await serve((req, res) => {
      seen.push(req.url!)
      setTimeout(() => res.end('done'), 150)
    })
    servers.push(s.server)
    const p = pool(s.port, 1)
    const first = p.request('GET', '/first', undefined, soon())
    const queued = p.request('GET', '/queued', undefined, soon(50)).then(
      () => 'answered',
      (e: unknown) => (e as Error).message,
    )
    // It gives up at its own deadline, while the first request is still being answered.
    expect(await Promise.race([queued, first.then(() => 'first answered first')])).to.contain('timed out waiting for a connection')
    expect((await first).body.toString()).to.equal('done')
    expect((await p.request('GET', '/after', undefined, soon())).body.toString()).to.equal('done')
    expect(seen).to.deep.equal(['/first', '/after'])
  })

  it('rejects when nothing listens', async function () {
    const s = await serve((_req, res) => res.end())
    const port = s.port
    await new Promise((resolve) => s.server.close(resolve))
    const err = await pool(port).request('GET', '/', undefined, soon()).then(
      () => undefined,
      (e: unknown) => e as Error,
    )
    expect(err?.message).to.match(/ECONNREFUSED/)
  })

  it('parses an answer only once it is whole, whatever the split', function () {
    const whole = Buffer.from('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n')
    for (let cut = 0; cut < whole.length; cut++) expect(parseResponse(whole.subarray(0, cut)), `cut at ${cut}`).to.equal(undefined)
    const parsed = parseResponse(whole)
    expect(parsed && { status: parsed.status, body: parsed.body.toString(), consumed: parsed.consumed, close: parsed.close }).to.deep.equal({
      status: 201,
      body: 'abcde',
      consumed: whole.length,
      close: true,
    })
    expect(() => parseResponse(Buffer.from('SSH-2.0-OpenSSH\r\n\r\n'))).to.throw('not an HTTP/1.x response')
  })
})
