import 'reflect-metadata' // before @peculiar/x509 (tsyringe needs the polyfill), as network/tls.ts does
import { expect } from 'chai'
import { X509Certificate } from 'node:crypto'
import http from 'node:http'
import { connect, Server as TlsServer, type TLSSocket } from 'node:tls'
import { createNodeCertificate, type TlsMaterial } from '../../../../network/tls.js'
import { freePort } from '../../../../network/process.js'
import { bodyPending, PING_PATH, refuse, startP2pServer, type P2pPeer, type P2pServer, type P2pServerOptions } from '../../../../node/exchange/p2p-server.js'
import { issueCertificate } from '../../../support/certificates.js'
import { waitUntil } from '../../../support/wait.js'

interface Answer {
  status: number
  body: string
  headers: string
}

/**
 * Who the p2p endpoint lets through and what it answers the rest, over real mutual TLS: a client with no certificate,
 * one nobody registered, one that does not verify, one naming no org, one over a connection cap, a request while it
 * drains. Each is answered with its status and logged, and never reaches the handler.
 */
describe('p2p endpoint: refusals', () => {
  let own: TlsMaterial
  let member: TlsMaterial
  const servers: P2pServer[] = []
  const sockets: TLSSocket[] = []
  let lines: string[]
  let handled: P2pPeer[]

  before(async () => {
    own = await createNodeCertificate('orgA', 'nodeA')
    member = await createNodeCertificate('orgB', 'nodeB')
  })
  beforeEach(() => {
    lines = []
    handled = []
  })
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy()
    for (const s of servers.splice(0)) await s.close()
  })

  async function serve(opts: Partial<P2pServerOptions> = {}): Promise<P2pServer> {
    const server = await startP2pServer({
      host: '127.0.0.1',
      port: await freePort(),
      cert: own.cert,
      key: own.key,
      unknownCertificates: 'http',
      log: (l) => lines.push(l),
      handler: (_req, res, peer) => {
        handled.push(peer)
        res.writeHead(204).end()
      },
      ...opts,
    })
    servers.push(server)
    return server
  }

  /** A TLS connection to `server` presenting `client` (or no certificate). */
  async function opened(server: P2pServer, client: TlsMaterial | undefined): Promise<TLSSocket> {
    const url = new URL(server.url)
    const s = connect({ host: url.hostname, port: Number(url.port), ...(client ? { cert: client.cert, key: client.key } : {}), ca: own.cert, servername: 'localhost', checkServerIdentity: () => undefined })
    sockets.push(s)
    s.on('error', () => {})
    await new Promise((r) => s.once('secureConnect', r))
    return s
  }

  /** Writes `request` (raw HTTP/1.1) and answers the first response on the socket (its body sized or chunked). */
  function ask(s: TLSSocket, request: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      let text = ''
      const onData = (c: Buffer): void => {
        text += c.toString()
        const end = text.indexOf('\r\n\r\n')
        if (end < 0) return
        const head = text.slice(0, end)
        const rest = text.slice(end + 4)
        let body: string
        if (/transfer-encoding: chunked/i.test(head)) {
          if (!rest.includes('0\r\n\r\n')) return
          body = ''
          for (let at = 0; ; ) {
            const eol = rest.indexOf('\r\n', at)
            const size = parseInt(rest.slice(at, eol), 16)
            if (size === 0) break
            body += rest.slice(eol + 2, eol + 2 + size)
            at = eol + 2 + size + 2
          }
        } else {
          const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0)
          if (rest.length < length) return
          body = rest.slice(0, length)
        }
        s.off('data', onData)
        resolve({ status: Number(head.split(' ')[1]), headers: head, body })
      }
      s.on('data', onData)
      s.once('close', () => reject(new Error(`closed before an answer: ${JSON.stringify(text)}`)))
      s.write(request)
    })
  }
  const post = (body = '{}') => `POST /api/v1/batches HTTP/1.1\r\nHost: nodeA\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
  const error = (a: Answer) => (JSON.parse(a.body) as { error: string }).error

  it('answers 401 to a client without a certificate and to one no node registered, logging each', async () => {
    const server = await serve()
    server.trust([member.cert])
    const stranger = await createNodeCertificate('orgZ', 'nodeZ')
    const none = await ask(await opened(server, undefined), post())
    expect(none.status).to.equal(401)
    expect(error(none)).to.equal('UNAUTHORIZED: no client certificate')
    const unknown = await ask(await opened(server, stranger), post())
    expect(error(unknown)).to.equal('UNAUTHORIZED: the client certificate is not one a registered node published')
    expect(unknown.headers).to.match(/connection: close/i)
    const fingerprint = new X509Certificate(stranger.cert).fingerprint256
    expect(lines).to.deep.equal([
      'p2p: refused POST /api/v1/batches from a client without a certificate at 127.0.0.1: no client certificate',
      `p2p: refused POST /api/v1/batches from certificate CN=nodeZ, O=orgZ sha256 ${fingerprint} at 127.0.0.1: the client certificate is not one a registered node published`,
    ])
    expect(handled).to.deep.equal([])
  })

  it('answers 401 to a registered certificate that does not verify (expired), and to one that names no org', async () => {
    const expired = await createNodeCertificate('orgE', 'nodeE', { validYears: 0 })
    const noOrg = await issueCertificate(own, '', 'nodeX')
    const server = await serve()
    server.trust([expired.cert, noOrg.cert])
    expect(error(await ask(await opened(server, expired), post()))).to.equal('UNAUTHORIZED: the client certificate does not verify: CERT_HAS_EXPIRED')
    expect(error(await ask(await opened(server, noOrg), post()))).to.equal('UNAUTHORIZED: client certificate names no organization')
    expect(handled).to.deep.equal([])
  })

  it('answers 401 to a registered certificate naming two orgs, showing both in its refusal line', async () => {
    const twoOrgs = await issueCertificate(own, 'orgB, O=orgC', 'nodeX')
    const server = await serve()
    server.trust([twoOrgs.cert])
    expect(error(await ask(await opened(server, twoOrgs), post()))).to.equal('UNAUTHORIZED: client certificate names no organization')
    const fingerprint = new X509Certificate(twoOrgs.cert).fingerprint256
    expect(lines).to.deep.equal([`p2p: refused POST /api/v1/batches from certificate CN=nodeX, O=orgB+orgC sha256 ${fingerprint} at 127.0.0.1: client certificate names no organization`])
    expect(handled).to.deep.equal([])
  })

  it('hands a registered peer\'s request to the handler with its org, and answers 404 without a handler', async () => {
    const server = await serve()
    server.trust([member.cert])
    expect((await ask(await opened(server, member), post())).status).to.equal(204)
    expect(handled.map((p) => p.org)).to.deep.equal(['orgB'])
    expect(handled[0]!.fingerprint).to.equal(new X509Certificate(member.cert).fingerprint256)

    const bare = await serve({ handler: undefined })
    bare.trust([member.cert])
    const s = await opened(bare, member)
    expect((await ask(s, `GET ${PING_PATH} HTTP/1.1\r\nHost: nodeA\r\n\r\n`)).status).to.equal(204)
    const missing = await ask(s, post())
    expect(missing.status).to.equal(404)
    expect(error(missing)).to.equal('NOT_FOUND: no route for POST /api/v1/batches')
  })

  it('answers 429 naming the quota on a connection over its certificate\'s cap, and counts the org from orgOf', async () => {
    const server = await serve({ connections: { perCertificate: 1, perOrg: 5, unregistered: 5, total: 50 }, orgOf: () => 'orgB-registered' })
    server.trust([member.cert])
    const first = await opened(server, member)
    expect((await ask(first, post())).status).to.equal(204)
    const second = await opened(server, member)
    const capped = await ask(second, post())
    expect(capped.status).to.equal(429)
    const fingerprint = new X509Certificate(member.cert).fingerprint256
    expect(error(capped)).to.equal(`TOO_MANY_REQUESTS: certificate sha256 ${fingerprint} already has 1 connections open here (quotas.connectionsPerCertificate)`)
    expect(capped.headers).to.match(/connection: close/i)
    expect(handled).to.have.length(1)

    const perOrg = await serve({ connections: { perCertificate: 5, perOrg: 1, unregistered: 5, total: 50 }, orgOf: () => 'orgB-registered' })
    perOrg.trust([member.cert])
    await ask(await opened(perOrg, member), post())
    expect(error(await ask(await opened(perOrg, member), post()))).to.equal('TOO_MANY_REQUESTS: org orgB-registered already has 1 connections open here over all its nodes (quotas.connectionsPerOrg)')
  })

  it('goes on serving when the caller\'s update of the peers fails, logging it', async () => {
    const server = await serve({
      beforeUse: () => {
        throw new Error('the database is closed')
      },
    })
    server.trust([member.cert])
    expect((await ask(await opened(server, member), post())).status).to.equal(204)
    expect(lines).to.include('p2p: the peers could not be brought up to date: the database is closed')
  })

  it('answers 503 to a request that comes while it drains, and lets the requests in flight finish', async () => {
    const releases: (() => void)[] = []
    const server = await serve({
      handler: (_req, res, peer) => {
        handled.push(peer)
        releases.push(() => res.writeHead(204).end())
      },
    })
    server.trust([member.cert])
    const [a, b] = [await opened(server, member), await opened(server, member)]
    const answers = { a: '', b: '' }
    a.on('data', (c: Buffer) => (answers.a += c.toString()))
    b.on('data', (c: Buffer) => (answers.b += c.toString()))
    a.write(post())
    await waitUntil('a\'s request reaches the handler', () => handled.length === 1, { intervalMs: 5 })
    // b's second request waits behind its first on that connection.
    b.write(post() + post())
    await waitUntil('b\'s first request reaches the handler', () => handled.length === 2, { intervalMs: 5 })
    const drained = server.drain(5_000)
    servers.splice(servers.indexOf(server), 1)
    releases[1]!()
    await waitUntil('b\'s second request is answered', () => (answers.b.match(/HTTP\/1\.1/g) ?? []).length === 2, { intervalMs: 5 })
    releases[0]!()
    await drained
    expect(answers.a).to.match(/^HTTP\/1\.1 204/)
    expect(answers.b.match(/HTTP\/1\.1 \d+/g)).to.deep.equal(['HTTP/1.1 204', 'HTTP/1.1 503'])
    expect(answers.b).to.contain('{"error":"UNAVAILABLE: this node is stopping"}')
    expect(handled).to.have.length(2)
  })

  it('leaves out a peer certificate that does not parse, logging it once, and skips its own', async () => {
    const server = await serve()
    server.trust(['not a certificate', own.cert, member.cert])
    server.trust(['not a certificate', member.cert])
    expect(lines.filter((l) => l.startsWith('p2p: left out a peer certificate that does not parse'))).to.have.length(1)
    expect((await ask(await opened(server, member), post())).status).to.equal(204)
    // A fingerprint the caller computed is taken as it is.
    const other = await createNodeCertificate('orgC', 'nodeC')
    server.trust([other.cert], new Map([[other.cert, new X509Certificate(other.cert).fingerprint256]]))
    expect((await ask(await opened(server, other), post())).status).to.equal(204)
    expect((await ask(await opened(server, member), post())).status, 'a peer no longer trusted').to.equal(401)
  })

  it('keeps the previous TLS context when a new one cannot be made, logging why', async () => {
    const original = TlsServer.prototype.setSecureContext
    const server = await serve()
    TlsServer.prototype.setSecureContext = () => {
      throw new Error('bad certificate in the CA list')
    }
    try {
      server.trust([member.cert])
      await opened(server, member).catch(() => undefined)
    } finally {
      TlsServer.prototype.setSecureContext = original
    }
    expect(lines).to.include('p2p: kept the previous TLS context: bad certificate in the CA list')
  })
})

/** The answer a refusal gets, over a plain HTTP server. */
describe('p2p endpoint: refuse and bodyPending', () => {
  let server: http.Server
  let port: number
  let onRequest: http.RequestListener = () => {}
  let pending: boolean[]

  before(async () => {
    server = http.createServer((req, res) => onRequest(req, res))
    port = await freePort()
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r))
  })
  after(async () => {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
  })
  beforeEach(() => {
    pending = []
  })

  function request(headers: Record<string, string>, body?: string): Promise<{ status?: number; error?: string }> {
    return new Promise((resolve) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers, agent: false }, (res) => {
        res.resume()
        res.on('end', () => resolve({ status: res.statusCode! }))
        res.on('error', (e) => resolve({ error: e.message }))
      })
      req.on('error', (e) => resolve({ error: e.message }))
      req.end(body)
    })
  }

  it('tells whether a request\'s body is still unread: by its length, its chunking or its Expect', async () => {
    onRequest = (req, res) => {
      pending.push(bodyPending(req))
      refuse(req, res, 400, 'BAD_PEER_DATA: no')
    }
    await request({ 'content-length': '0' })
    await request({ 'content-length': '5' }, 'hello')
    await request({ 'transfer-encoding': 'chunked' }, 'hello')
    await request({})
    await request({ expect: '100-continue' })
    expect(pending).to.deep.equal([false, true, true, false, true])
  })

  it('drops the connection when the answer had begun: a refusal cannot be sent after a head', async () => {
    onRequest = (req, res) => {
      res.writeHead(200, { 'content-length': '10' })
      res.write('part')
      refuse(req, res, 500, 'INTERNAL: too late')
    }
    const r = await request({})
    expect(r.error ?? `answered ${r.status}`).to.match(/aborted|socket hang up|ECONNRESET/)
  })
})
