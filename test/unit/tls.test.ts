import { expect } from 'chai'
import https from 'node:https'
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { createNodeCertificate, peerIdFromCertificate, type TlsMaterial } from '../../network/tls.js'
import { startP2pServer, type P2pServer } from '../../node/exchange/p2p-server.js'
import { freePort } from '../../network/process.js'

function ping(url: string, client: TlsMaterial | undefined, ca: string): Promise<number> {
  return new Promise((res, rej) => {
    const req = https.request(`${url}/api/v1/ping`, { method: 'HEAD', ca, ...(client ? { cert: client.cert, key: client.key } : {}), agent: false }, (r) => {
      r.resume()
      res(r.statusCode ?? 0)
    })
    req.on('error', rej)
    req.end()
  })
}

describe('member TLS material and the p2p endpoint (mutual TLS)', () => {
  let org0: TlsMaterial
  let org1: TlsMaterial
  let stranger: TlsMaterial
  let server: P2pServer

  before(async () => {
    org0 = await createNodeCertificate('org0', 'node0')
    org1 = await createNodeCertificate('org1', 'node1')
    stranger = await createNodeCertificate('org9', 'node9')
    server = await startP2pServer({ host: '127.0.0.1', port: await freePort(), cert: org0.cert, key: org0.key })
  })
  after(async () => server?.close())

  it('names the org in the subject and covers 127.0.0.1', () => {
    const x = new X509Certificate(org1.cert)
    expect(x.subject).to.contain('O=org1')
    expect(x.subject).to.contain('CN=node1')
    expect(x.subjectAltName).to.contain('IP Address:127.0.0.1')
    expect(peerIdFromCertificate(org1.cert)).to.equal('org1')
    expect(x.checkPrivateKey(createPrivateKey(org1.key))).to.equal(true)
  })

  it('refuses a client without a certificate, and one whose certificate it has not been told to trust', async () => {
    await expectTlsRefusal(ping(server.url, undefined, org0.cert))
    await expectTlsRefusal(ping(server.url, org1, org0.cert))
  })

  it('accepts a trusted peer, and stops accepting it once it is no longer trusted', async () => {
    server.trust([org1.cert])
    expect(await ping(server.url, org1, org0.cert)).to.equal(204)
    await expectTlsRefusal(ping(server.url, stranger, org0.cert))
    server.trust([])
    await expectTlsRefusal(ping(server.url, org1, org0.cert))
  })
})


async function expectTlsRefusal(p: Promise<number>): Promise<void> {
  const outcome = await p.then(
    (status) => `status ${status}`,
    (err: NodeJS.ErrnoException) => `error ${err.code ?? err.message}`,
  )
  expect(outcome).to.match(/^error /)
}
