import 'reflect-metadata' // before @peculiar/x509 (tsyringe needs the polyfill), as network/tls.ts does
import { expect } from 'chai'
import { connect, Server as TlsServer, type SecureContextOptions, type TLSSocket } from 'node:tls'
import { createNodeCertificate, type TlsMaterial } from '../../../../network/tls.js'
import { freePort } from '../../../../network/process.js'
import { PING_PATH, startP2pServer, type P2pServer } from '../../../../node/exchange/p2p-server.js'
import { waitUntil } from '../../../support/wait.js'

/** The p2p endpoint's connections: a trusted peer that pipelines a flood on one cannot starve the others. */
describe('p2p endpoint connections', () => {
  let server: P2pServer
  let own: TlsMaterial
  let peer: TlsMaterial
  const sockets: TLSSocket[] = []
  let handled = 0
  let running = 0
  let maxAtOnce = 0
  let open: () => void = () => {}
  let gate: Promise<void> | undefined

  before(async () => {
    own = await createNodeCertificate('orgA', 'nodeA')
    peer = await createNodeCertificate('orgB', 'nodeB')
    server = await startP2pServer({
      host: '127.0.0.1',
      port: await freePort(),
      cert: own.cert,
      key: own.key,
      queuedRequestsPerConnection: 2,
      handler: (_req, res) => {
        handled++
        running++
        maxAtOnce = Math.max(maxAtOnce, running)
        void (gate ?? Promise.resolve()).then(() => {
          running--
          res.writeHead(204).end()
        })
      },
    })
    server.trust([peer.cert])
  })
  after(async () => {
    for (const s of sockets) s.destroy()
    open()
    await server?.close()
  })

  async function opened(): Promise<TLSSocket> {
    const url = new URL(server.url)
    const s = connect({ host: url.hostname, port: Number(url.port), cert: peer.cert, key: peer.key, ca: own.cert, servername: 'localhost', checkServerIdentity: () => undefined })
    sockets.push(s)
    s.on('error', () => {})
    await new Promise((r) => s.once('secureConnect', r))
    return s
  }

  function answers(s: TLSSocket, count: number, status: number): Promise<number> {
    return new Promise((resolve) => {
      let text = ''
      const seen = (): number => (text.match(new RegExp(`HTTP/1\\.1 ${status}`, 'g')) ?? []).length
      s.on('data', (c: Buffer) => {
        text += c.toString()
        if (seen() >= count) resolve(seen())
      })
      s.once('close', () => resolve(seen()))
    })
  }

  it("serves a peer's pipelined requests one at a time while its other connection is answered", async () => {
    gate = new Promise<void>((r) => (open = r))
    // Within what a connection may have waiting (2 + 32); past it the connection is closed (node/core/pipelining.ts).
    const total = 30
    const flood = await opened()
    const floodAnswered = answers(flood, total, 204)
    flood.write(`POST /api/v1/batches HTTP/1.1\r\nHost: nodeA\r\nContent-Length: 0\r\n\r\n`.repeat(total))
    await waitUntil('the first request of the flood reaches the handler', () => handled >= 1, { intervalMs: 10 })

    const other = await opened()
    const pinged = answers(other, 1, 204)
    other.write(`GET ${PING_PATH} HTTP/1.1\r\nHost: nodeA\r\n\r\n`)
    expect(await pinged, 'the ping on another connection').to.equal(1)
    expect(handled, 'requests of the flooded connection handed to the handler').to.equal(1)

    gate = undefined
    open()
    expect(await floodAnswered).to.equal(total)
    expect(maxAtOnce).to.equal(1)
  })
})

/** The certificates the endpoint trusts: a new TLS context once a connection comes, not at every change of the peers. */
describe('p2p endpoint trust', () => {
  let server: P2pServer
  let own: TlsMaterial
  const peers: TlsMaterial[] = []
  let contexts = 0
  const original = TlsServer.prototype.setSecureContext

  before(async () => {
    own = await createNodeCertificate('orgA', 'nodeA')
    for (let i = 0; i < 3; i++) peers.push(await createNodeCertificate(`org${i}`, `node${i}`))
    TlsServer.prototype.setSecureContext = function (this: TlsServer, options: SecureContextOptions) {
      contexts++
      original.call(this, options)
    }
    server = await startP2pServer({ host: '127.0.0.1', port: await freePort(), cert: own.cert, key: own.key, handler: (_req, res) => res.writeHead(204).end() })
    // The server's own, made as it is created.
    contexts = 0
  })
  after(async () => {
    TlsServer.prototype.setSecureContext = original
    await server?.close()
  })

  /** Whether `peer` completes a handshake and is answered. */
  async function admitted(peer: TlsMaterial, to: P2pServer = server): Promise<boolean> {
    const url = new URL(to.url)
    const s = connect({ host: url.hostname, port: Number(url.port), cert: peer.cert, key: peer.key, ca: own.cert, servername: 'localhost', checkServerIdentity: () => undefined })
    try {
      return await new Promise<boolean>((resolve) => {
        s.once('error', () => resolve(false))
        s.once('close', () => resolve(false))
        s.once('secureConnect', () => {
          s.write(`GET ${PING_PATH} HTTP/1.1\r\nHost: nodeA\r\n\r\n`)
          s.once('data', (c: Buffer) => resolve(c.toString().startsWith('HTTP/1.1 204')))
        })
      })
    } finally {
      s.destroy()
    }
  }

  it('makes no TLS context while the peers change with nothing connecting, and one for the next connection', async () => {
    for (let n = 1; n <= peers.length; n++) server.trust(peers.slice(0, n).map((p) => p.cert))
    expect(contexts, 'contexts made by three changes of the peers').to.equal(0)
    expect(await admitted(peers[2]!), 'the last peer trusted').to.equal(true)
    expect(contexts).to.equal(1)
    expect(await admitted(peers[0]!), 'the first peer trusted').to.equal(true)
    expect(contexts, 'contexts made for a second connection with the peers unchanged').to.equal(1)
  })

  it('lets a lazy caller trust the peers as a connection comes, and again before each request', async () => {
    let uses = 0
    let pending: string[] | undefined = [peers[1]!.cert]
    const lazy: P2pServer = await startP2pServer({
      host: '127.0.0.1',
      port: await freePort(),
      cert: own.cert,
      key: own.key,
      handler: (_req, res) => res.writeHead(204).end(),
      beforeUse: () => {
        uses++
        if (pending) lazy.trust(pending)
        pending = undefined
      },
    })
    try {
      expect(await admitted(peers[1]!, lazy), 'a peer trusted only once it connects').to.equal(true)
      // One connection and its one request.
      expect(uses).to.equal(2)
    } finally {
      await lazy.close()
    }
  })

  it('refuses at the handshake a peer no longer trusted', async () => {
    server.trust([peers[0]!.cert])
    expect(await admitted(peers[1]!)).to.equal(false)
    expect(await admitted(peers[0]!)).to.equal(true)
  })
})
