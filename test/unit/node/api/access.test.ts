import { expect } from 'chai'
import http, { type IncomingMessage } from 'node:http'
import WebSocket, { WebSocketServer } from 'ws'
import { startApiServer, type ApiServer } from '../../../../node/api/server.js'
import { accessPolicy, hostAllowed, isLoopbackName, originAllowed, upgradeRefusal } from '../../../../node/api/access.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../node/core/limits.js'
import type { NodeServices } from '../../../../node/services.js'
import { freePort } from '../../../../network/process.js'

const BROADCAST = '/api/v1/namespaces/default/messages/broadcast'

/**
 * The API's access rules over real sockets, through the real server and the broadcast route: what a web page in the
 * developer's browser can send (a cross-origin text/plain POST, a rebound Host, a WebSocket from its own origin) is
 * refused before any handler runs, and what programs and the member's own pages send still reaches it. The stand-in
 * sender records each broadcast that reached it and answers 409 "reached".
 */
describe('API access: host names, origins, WebSocket upgrades', () => {
  let api: ApiServer
  let port: number
  const reached: string[] = []
  const wss = new WebSocketServer({ noServer: true })
  const logs: string[] = []

  before(async () => {
    const broadcast = (_ns: string, input: unknown): never => {
      reached.push(JSON.stringify(input))
      throw new ParleyError('CONFLICT', 'reached')
    }
    const services = { config: { limits: DEFAULT_REQUEST_LIMITS }, sender: { broadcast } } as unknown as NodeServices
    port = await freePort()
    const access = accessPolicy({ host: '127.0.0.1', port, allowedHosts: ['parley.example', 'other.example:8443'], allowedOrigins: ['https://app.example'] })
    api = await startApiServer({
      host: '127.0.0.1',
      port,
      services,
      log: (l) => logs.push(l),
      access,
      onUpgrade: (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => ws.send('welcome')),
    })
  })
  after(async () => {
    for (const c of wss.clients) c.terminate()
    wss.close()
    await api.close()
    expect(logs, 'nothing here is a server error').to.deep.equal([])
  })
  beforeEach(() => (reached.length = 0))

  function call(method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; error?: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          resolve({ status: res.statusCode ?? 0, ...(text.startsWith('{"error"') ? { error: (JSON.parse(text) as { error: string }).error } : {}) })
        })
      })
      req.on('error', reject)
      req.end(body)
    })
  }
  const message = JSON.stringify({ header: { topics: ['orders'] }, data: [{ value: 'hi' }] })

  it('refuses a cross-origin text/plain POST (what a page sends without a preflight) with 403, and writes nothing', async () => {
    const r = await call('POST', BROADCAST, { origin: 'http://evil.example', 'content-type': 'text/plain' }, message)
    expect(r.status).to.equal(403)
    expect(r.error).to.match(/^FORBIDDEN: a page of origin "http:\/\/evil\.example" may not POST here: .*api\.allowedOrigins/)
    expect(reached).to.deep.equal([])
  })

  it('refuses a POST from a foreign origin whatever its type, from a null origin, and from our name on another port', async () => {
    for (const origin of ['http://evil.example', 'null', `http://127.0.0.1:${port + 1}`, `http://localhost.evil.example:${port}`, 'https://app.example:444']) {
      const r = await call('POST', BROADCAST, { origin, 'content-type': 'application/json' }, message)
      expect(r.status, origin).to.equal(403)
    }
    for (const method of ['PUT', 'DELETE']) expect((await call(method, '/api/v1/subscriptions', { origin: 'http://evil.example' })).status, method).to.equal(403)
    expect(reached).to.deep.equal([])
  })

  it('lets the member\'s own pages, the allowed origins and programs without an Origin write', async () => {
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `https://ui.localhost:${port}`, `http://[::1]:${port}`, 'https://app.example', 'http://parley.example:9000', undefined]) {
      const r = await call('POST', BROADCAST, { ...(origin ? { origin } : {}), 'content-type': 'application/json' }, message)
      expect(r, String(origin)).to.deep.equal({ status: 409, error: 'CONFLICT: reached' })
    }
    expect(reached).to.have.length(7)
  })

  it('lets a page of any origin read (it cannot see the answer: no CORS is granted)', async () => {
    const r = await call('GET', '/api/v1/nowhere', { origin: 'http://evil.example' })
    expect(r.status).to.equal(404)
    const o = await call('OPTIONS', BROADCAST, { origin: 'http://evil.example', 'access-control-request-method': 'POST' })
    expect(o.status).to.equal(204)
  })

  it('refuses a request naming another host (DNS rebinding) with a JSON 421 naming the knob, whatever the method', async () => {
    for (const host of ['evil.example', `evil.example:${port}`, `localhost:${port + 1}`, `127.0.0.1:${port + 1}`, 'localhost', `localhost.:${port}`, `127.0.0.1.nip.io:${port}`, `other.example:${port}`, '0x7f.0.0.1']) {
      for (const method of ['GET', 'POST']) {
        const r = await call(method, BROADCAST, { host, 'content-type': 'application/json' }, method === 'POST' ? message : undefined)
        expect(r.status, `${method} ${host}`).to.equal(421)
        expect(r.error).to.match(/^MISDIRECTED_REQUEST: Host ".*" is not one of this member's host names \(localhost, \*\.localhost, 127\.x\.x\.x, \[::1\] on port \d+, and api\.allowedHosts\)/)
      }
    }
    expect(reached).to.deep.equal([])
  })

  it('serves its loopback names on its port, the addresses standing in for hosts, and the configured names', async () => {
    for (const host of [`127.0.0.1:${port}`, `LOCALHOST:${port}`, `a.b.localhost:${port}`, `127.0.0.2:${port}`, `[::1]:${port}`, 'parley.example', 'parley.example:443', 'other.example:8443']) {
      expect((await call('POST', BROADCAST, { host, 'content-type': 'application/json' }, message)).status, host).to.equal(409)
    }
  })

  describe('WebSocket upgrades', () => {
    function open(headers: Record<string, string>, origin?: string): Promise<{ opened: true } | { status: number; body: string }> {
      return new Promise((resolve, reject) => {
        const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?namespace=default&name=orders-app`, { headers, ...(origin ? { origin } : {}) })
        ws.once('message', () => {
          ws.close()
          resolve({ opened: true })
        })
        ws.once('unexpected-response', (_req, res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
        })
        ws.once('error', (err) => {
          if (!/Unexpected server response/.test(err.message)) reject(err)
        })
      })
    }

    it('refuses one from a foreign origin (a page attaching to a durable subscription) with 403', async () => {
      const r = await open({}, 'http://evil.example')
      expect(r).to.have.property('status', 403)
      expect(JSON.parse((r as { body: string }).body).error).to.match(/^FORBIDDEN: a page of origin "http:\/\/evil\.example" may not open a WebSocket/)
    })

    it('refuses one naming another host with 421', async () => {
      expect(await open({ host: `evil.example:${port}` })).to.have.property('status', 421)
    })

    it('accepts one without an Origin (SDKs, ws, the suites) and one from the member\'s own page', async () => {
      expect(await open({})).to.deep.equal({ opened: true })
      expect(await open({}, `http://127.0.0.1:${port}`)).to.deep.equal({ opened: true })
      expect(await open({}, 'https://app.example')).to.deep.equal({ opened: true })
    })
  })

  describe('the rules', () => {
    const policy = accessPolicy({ host: '10.1.2.3', port: 5000, allowedHosts: ['api.example:5443'], allowedOrigins: [] })

    it('count the bind address as a host name, and a wildcard bind as none', () => {
      expect(hostAllowed('10.1.2.3:5000', policy)).to.equal(true)
      expect(hostAllowed('10.1.2.3:5001', policy)).to.equal(false)
      expect(accessPolicy({ host: '0.0.0.0', port: 5000, allowedHosts: [], allowedOrigins: [] })).to.not.have.property('bindHost')
      expect(hostAllowed('[fd00::1]:5000', accessPolicy({ host: 'fd00::1', port: 5000, allowedHosts: [], allowedOrigins: [] }))).to.equal(true)
    })

    it('take a configured name only with its port when one is given', () => {
      expect(hostAllowed('api.example:5443', policy)).to.equal(true)
      expect(hostAllowed('api.example', policy)).to.equal(false)
      expect(originAllowed('https://api.example:5443', policy)).to.equal(true)
    })

    it('know loopback by its names, not by what a name resolves to', () => {
      for (const n of ['localhost', 'x.localhost', '127.0.0.1', '127.255.0.9', '[::1]']) expect(isLoopbackName(n), n).to.equal(true)
      for (const n of ['localhost.example', '127.0.0.256', '127.1', 'localtest.me', '[::2]']) expect(isLoopbackName(n), n).to.equal(false)
    })

    it('name the bind address among the host names a refusal lists, unless it is a loopback one', () => {
      const refused = upgradeRefusal({ headers: { host: 'evil.example' } } as IncomingMessage, policy)!
      expect(refused).to.include({ status: 421, reason: 'Misdirected Request' })
      expect(refused.error.message).to.contain('(localhost, *.localhost, 127.x.x.x, [::1], 10.1.2.3 on port 5000, and api.allowedHosts)')
      const loopback = accessPolicy({ host: '127.0.0.1', port: 5000, allowedHosts: [], allowedOrigins: [] })
      expect(upgradeRefusal({ headers: { host: 'evil.example' } } as IncomingMessage, loopback)!.error.message).to.contain('(localhost, *.localhost, 127.x.x.x, [::1] on port 5000, and api.allowedHosts)')
    })

    it('word a foreign origin\'s refusal by what it asked: a WebSocket, a method, or a request without one', () => {
      const ws = upgradeRefusal({ headers: { origin: 'http://evil.example', upgrade: 'websocket' } } as unknown as IncomingMessage, policy)!
      expect(ws).to.include({ status: 403, reason: 'Forbidden' })
      expect(ws.error.message).to.match(/^a page of origin "http:\/\/evil\.example" may not open a WebSocket:/)
      const noMethod = upgradeRefusal({ headers: { origin: 'http://evil.example' } } as unknown as IncomingMessage, policy)!
      expect(noMethod.error.message).to.match(/^a page of origin "http:\/\/evil\.example" may not send here:/)
      expect(upgradeRefusal({ headers: { origin: 'http://10.1.2.3:5000', host: '10.1.2.3:5000' } } as unknown as IncomingMessage, policy)).to.equal(undefined)
    })

    it('take the scheme\'s default port for an origin without one', () => {
      const named = accessPolicy({ host: '127.0.0.1', port: 5000, allowedHosts: ['api.example:443', 'plain.example:80'], allowedOrigins: [] })
      expect(originAllowed('https://api.example', named)).to.equal(true)
      expect(originAllowed('http://api.example', named)).to.equal(false)
      expect(originAllowed('http://plain.example', named)).to.equal(true)
      expect(originAllowed('https://plain.example', named)).to.equal(false)
    })

    it('treat an origin that is not a URL, or not http(s), as foreign', () => {
      expect(originAllowed('ws://localhost:5000', policy)).to.equal(false)
      for (const o of ['null', '', 'file://', 'chrome-extension://abc', 'http://localhost:5000/x y']) expect(originAllowed(o, policy), o).to.equal(false)
      expect(originAllowed('http://localhost:5000', policy)).to.equal(true)
    })
  })
})
