import 'reflect-metadata' // before @peculiar/x509 (tsyringe needs the polyfill), as network/tls.ts does
import { expect } from 'chai'
import { X509Certificate } from 'node:crypto'
import https from 'node:https'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createNodeCertificate, type TlsMaterial } from '../../../../network/tls.js'
import { freePort } from '../../../../network/process.js'
import { attempt, ContentFailure, type AttemptOptions, type Outcome } from '../../../../node/exchange/client.js'
import { startP2pServer, type P2pServer } from '../../../../node/exchange/p2p-server.js'
import { issueCertificate } from '../../../support/certificates.js'

/**
 * One attempt to a peer's endpoint, against a real mutual-TLS endpoint answering as each test says: which answers are
 * final and which are worth another try, the problem each names, and what a stream body that breaks its promise does.
 */
describe('exchange client: one attempt', () => {
  let own: TlsMaterial
  let peer: TlsMaterial
  let server: P2pServer
  let agent: https.Agent
  let handler: (req: IncomingMessage, res: ServerResponse) => void
  let paths: string[]

  before(async () => {
    own = await createNodeCertificate('orgA', 'nodeA')
    peer = await createNodeCertificate('orgB', 'nodeB')
    server = await startP2pServer({
      host: '127.0.0.1',
      port: await freePort(),
      cert: peer.cert,
      key: peer.key,
      handler: (req, res) => {
        paths.push(req.url ?? '')
        handler(req, res)
      },
    })
    server.trust([own.cert])
  })
  after(() => server.close())
  beforeEach(() => {
    paths = []
    agent = new https.Agent({ keepAlive: true, maxCachedSessions: 0 })
    handler = (req, res) => {
      req.resume()
      req.on('end', () => res.writeHead(204).end())
    }
  })
  afterEach(() => agent.destroy())

  function send(opts: Partial<AttemptOptions> & { base?: string; pinned?: TlsMaterial } = {}): Promise<Outcome> {
    const pinned = opts.pinned ?? peer
    return attempt({
      target: { label: 'nodeB', base: new URL(opts.base ?? server.url), cert: pinned.cert, fingerprint: new X509Certificate(pinned.cert).fingerprint256 },
      own,
      agent,
      method: 'POST',
      path: '/api/v1/batches',
      headers: { 'content-type': 'application/json' },
      body: { bytes: Buffer.from('{}'), expectContinue: false },
      idleMs: 5_000,
      ...opts,
    })
  }
  const stream = (chunks: Uint8Array[], failure?: unknown): AsyncIterable<Uint8Array> => ({
    async *[Symbol.asyncIterator]() {
      for (const c of chunks) yield c
      if (failure !== undefined) throw failure
    },
  })

  it('joins the path to the peer\'s endpoint, with or without its trailing slash', async () => {
    expect(await send({ base: `${server.url}/p2p` })).to.deep.equal({ kind: 'ok' })
    expect(await send({ base: `${server.url}/p2p/` })).to.deep.equal({ kind: 'ok' })
    expect(paths).to.deep.equal(['/p2p/api/v1/batches', '/p2p/api/v1/batches'])
  })

  it('takes a 4xx as final and a 401, 408, 429, 5xx or 3xx as worth another try, naming the peer\'s error', async () => {
    const cases: [number, string, Outcome][] = [
      [400, '{"error":"BAD_PEER_DATA: malformed batch"}', { kind: 'final', problem: '400 BAD_PEER_DATA: malformed batch' }],
      [413, '{"error":"PAYLOAD_TOO_LARGE: too big"}', { kind: 'final', problem: '413 PAYLOAD_TOO_LARGE: too big' }],
      [404, '', { kind: 'final', problem: '404 Not Found' }],
      [401, '{"error":"UNAUTHORIZED: not yet"}', { kind: 'retry', problem: '401 UNAUTHORIZED: not yet' }],
      [408, '{"error":7}', { kind: 'retry', problem: '408 {"error":7}' }],
      [429, '{"error":"TOO_MANY_REQUESTS: quotas.inFlightRequestsPerOrg"}', { kind: 'retry', problem: '429 TOO_MANY_REQUESTS: quotas.inFlightRequestsPerOrg' }],
      [503, '  <html>busy</html>\n', { kind: 'retry', problem: '503 <html>busy</html>' }],
      [302, '', { kind: 'retry', problem: '302 Found' }],
    ]
    for (const [status, body, outcome] of cases) {
      handler = (req, res) => {
        req.resume()
        res.writeHead(status).end(body)
      }
      expect(await send(), String(status)).to.deep.equal(outcome)
    }
  })

  it('refuses a server presenting a certificate the registered one signed, not that one itself, before sending', async () => {
    // What a member could do to pose as another node at its address: its certificate is a CA, so TLS alone admits it.
    const issued = await issueCertificate(peer, 'orgB', 'nodeB2')
    let reached = 0
    const posing = await startP2pServer({ host: '127.0.0.1', port: await freePort(), cert: issued.cert, key: issued.key, handler: (_req, res) => (reached++, res.writeHead(204).end()) })
    try {
      posing.trust([own.cert])
      const out = await send({ base: posing.url })
      const presented = new X509Certificate(issued.cert).fingerprint256
      const registered = new X509Certificate(peer.cert).fingerprint256
      expect(out).to.deep.equal({ kind: 'retry', problem: `the server presented certificate sha256 ${presented}, not the one nodeB registered (${registered})` })
      expect(reached).to.equal(0)
    } finally {
      await posing.close()
    }
  })

  it('takes a drop before the answer as worth another try, at once when the connection was a kept-alive one', async () => {
    const seen = new Set<unknown>()
    handler = (req, res) => {
      req.resume()
      // The first request on a connection is answered and the connection kept; a later one is dropped unanswered.
      if (seen.has(req.socket)) return void req.socket.destroy()
      seen.add(req.socket)
      req.on('end', () => res.writeHead(204).end())
    }
    expect(await send()).to.deep.equal({ kind: 'ok' })
    expect(await send()).to.deep.equal({ kind: 'retry', problem: 'ECONNRESET: socket hang up', now: true })
    agent.destroy()
    agent = new https.Agent({ keepAlive: true, maxCachedSessions: 0 })
    handler = (req) => {
      req.resume()
      req.socket.destroy()
    }
    expect(await send(), 'a fresh connection dropped').to.deep.equal({ kind: 'retry', problem: 'ECONNRESET: socket hang up' })
  })

  it('gives up an attempt that makes no progress, or that passes its deadline, as worth another try', async () => {
    handler = () => {}
    expect(await send({ idleMs: 100 })).to.deep.equal({ kind: 'retry', problem: 'no progress for 100 ms' })
    expect(await send({ idleMs: 5_000, deadlineMs: 100 })).to.deep.equal({ kind: 'retry', problem: 'no answer within 100 ms' })
  })

  it('streams a body after the peer\'s 100 Continue, and refuses for good one longer than announced', async () => {
    let received = 0
    handler = (req, res) => {
      res.writeContinue()
      req.on('data', (c: Buffer) => (received += c.length))
      req.on('end', () => res.writeHead(204).end())
      req.on('error', () => {})
    }
    expect(await send({ body: { stream: stream([new Uint8Array(3), new Uint8Array(4)]), size: 7 } })).to.deep.equal({ kind: 'ok' })
    expect(received).to.equal(7)
    expect(await send({ body: { stream: stream([new Uint8Array(3), new Uint8Array(5)]), size: 7 } })).to.deep.equal({ kind: 'final', problem: 'the content is longer than the announced 7 bytes' })
  })

  it('rejects with the content\'s own failure, as it threw it', async () => {
    handler = (req, res) => {
      res.writeContinue()
      req.resume()
      req.on('error', () => {})
      req.on('end', () => res.writeHead(204).end())
    }
    const disk = new Error('EIO: the blob store failed')
    const err = await send({ body: { stream: stream([new Uint8Array(3)], disk), size: 10 } }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err).to.be.instanceOf(ContentFailure)
    expect((err as ContentFailure).error).to.equal(disk)
    expect((err as ContentFailure).message).to.equal('the content failed: EIO: the blob store failed')
  })

  it('takes an error answer that breaks off as the answer, with what came of it', async () => {
    handler = (req, res) => {
      req.resume()
      res.writeHead(400, { 'content-length': '100' })
      res.write('{"error":"BAD_PEER')
      setTimeout(() => res.destroy(), 20)
    }
    expect(await send()).to.deep.equal({ kind: 'final', problem: '400 {"error":"BAD_PEER' })
  })
})
