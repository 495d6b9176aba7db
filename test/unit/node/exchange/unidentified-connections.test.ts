import { expect } from 'chai'
import { connect as tlsConnect } from 'node:tls'
import { connect as tcpConnect, type Socket } from 'node:net'
import { createNodeCertificate, type TlsMaterial } from '../../../../network/tls.js'
import { freePort } from '../../../../network/process.js'
import { startP2pServer, type P2pServer } from '../../../../node/exchange/p2p-server.js'

type ClosedMark = Socket & { closedByServer?: boolean }

/** Connections to the p2p endpoint that never start TLS cannot keep registered peers out. */
describe('p2p connections before their TLS handshake', () => {
  let own: TlsMaterial
  let peer: TlsMaterial
  let server: P2pServer
  let port: number
  let lines: string[]
  /** Plain TCP connections, each marked once the server closed it. */
  const raw: ClosedMark[] = []

  before(async () => {
    own = await createNodeCertificate('orgA', 'nodeA')
    peer = await createNodeCertificate('orgB', 'nodeB')
  })
  afterEach(async () => {
    for (const s of raw.splice(0)) s.destroy()
    await server.close()
  })

  async function start(unidentifiedPerAddress: number): Promise<void> {
    port = await freePort()
    lines = []
    server = await startP2pServer({
      host: '127.0.0.1', port, cert: own.cert, key: own.key, unknownCertificates: 'http', log: (l) => lines.push(l),
      connections: { perCertificate: 4, perOrg: 8, unregistered: 2, total: 16, unidentifiedPerAddress },
      handler: (_q, res) => res.writeHead(204).end(),
    })
    server.trust([peer.cert])
  }

  async function plain(localAddress: string): Promise<ClosedMark> {
    const s: ClosedMark = tcpConnect({ port, host: '127.0.0.1', localAddress })
    s.on('error', () => {})
    s.once('close', () => (s.closedByServer = true))
    raw.push(s)
    await new Promise((r) => s.once('connect', r))
    return s
  }

  function peerConnects(): Promise<string> {
    return new Promise<string>((resolve) => {
      const s = tlsConnect({ host: '127.0.0.1', port, cert: peer.cert, key: peer.key, ca: own.cert, servername: 'localhost', checkServerIdentity: () => undefined })
      s.on('secureConnect', () => {
        s.destroy()
        resolve('connected')
      })
      s.on('error', (e) => resolve(`failed: ${e.message}`))
    })
  }

  it('closes the oldest connection still in its handshake for a new one when the total is reached', async () => {
    await start(16)
    for (let i = 0; i < 16; i++) await plain(i < 8 ? '127.0.0.2' : '127.0.0.3')
    await new Promise((r) => setTimeout(r, 100))
    expect(await peerConnects(), lines.join(' | ')).to.equal('connected')
    expect(raw[0]!.closedByServer, 'the oldest plain connection').to.equal(true)
    expect(lines.join('\n')).to.include('(quotas.connections)')
  })

  it('keeps at most unidentifiedConnectionsPerAddress from one address, closing its oldest, and lets a peer in from it', async () => {
    await start(3)
    for (let i = 0; i < 5; i++) await plain('127.0.0.2')
    await new Promise((r) => setTimeout(r, 100))
    expect(raw.map((s) => s.closedByServer === true)).to.deep.equal([true, true, false, false, false])
    expect(lines.join('\n')).to.include('(quotas.unidentifiedConnectionsPerAddress)')
    const other = await plain('127.0.0.3')
    await new Promise((r) => setTimeout(r, 50))
    expect(other.closedByServer, 'another address keeps its own').to.equal(undefined)
    for (let i = 0; i < 3; i++) await plain('127.0.0.1')
    expect(await peerConnects(), lines.join(' | ')).to.equal('connected')
  })
})
