import 'reflect-metadata' // before @peculiar/x509 (tsyringe needs the polyfill), as network/tls.ts does
import { expect } from 'chai'
import https from 'node:https'
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { createNodeCertificate, peerIdFromCertificate, type TlsMaterial } from '../../../network/tls.js'
import { startP2pServer, type P2pServer } from '../../../node/exchange/p2p-server.js'
import { freePort } from '../../../network/process.js'
import { issueCertificate } from '../../support/certificates.js'

/**
 * What a HEAD /api/v1/ping came to: `status N`, or the error's code and whether the client had finished its side of
 * the TLS handshake (trusted the server and sent its own certificate, if any) before it.
 */
function ping(url: string, client: TlsMaterial | undefined, ca: string): Promise<string> {
  return new Promise((res) => {
    let handshaken = false
    const req = https.request(`${url}/api/v1/ping`, { method: 'HEAD', ca, ...(client ? { cert: client.cert, key: client.key } : {}), agent: false }, (r) => {
      r.resume()
      res(`status ${r.statusCode}`)
    })
    req.on('socket', (s) => s.once('secureConnect', () => (handshaken = true)))
    req.on('error', (err: NodeJS.ErrnoException) => res(`${handshaken ? 'after' : 'during'} the handshake: ${err.code ?? err.message}`))
    req.end()
  })
}

/**
 * The two ways the server refuses a client certificate at the TLS layer. Without one, TLS 1.3's certificate_required
 * alert (116). With one it does not trust, Node's server drops the connection once the handshake has verified it
 * (rejectUnauthorized), sending no alert: the client, which had trusted the server and sent its certificate, sees
 * the connection reset before any answer. Any other error (the client refusing the server's certificate, nothing
 * listening) is not a refusal of the client.
 */
const REFUSED_NO_CERTIFICATE = 'after the handshake: ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED'
const REFUSED_UNTRUSTED = 'after the handshake: ECONNRESET'

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
    expect(await ping(server.url, undefined, org0.cert)).to.equal(REFUSED_NO_CERTIFICATE)
    expect(await ping(server.url, org1, org0.cert)).to.equal(REFUSED_UNTRUSTED)
  })

  it('accepts a trusted peer, and stops accepting it once it is no longer trusted', async () => {
    server.trust([org1.cert])
    expect(await ping(server.url, org1, org0.cert)).to.equal('status 204')
    expect(await ping(server.url, stranger, org0.cert)).to.equal(REFUSED_UNTRUSTED)
    server.trust([])
    expect(await ping(server.url, org1, org0.cert)).to.equal(REFUSED_UNTRUSTED)
  })
})

describe("a member's certificate names the host it is reached at (members on their own hosts)", () => {
  let onHost3: TlsMaterial
  let namingHost2: TlsMaterial
  let client: TlsMaterial
  let server: P2pServer
  let misnamed: P2pServer

  before(async () => {
    onHost3 = await createNodeCertificate('org3', 'node3', { hosts: ['127.0.0.3'] })
    namingHost2 = await createNodeCertificate('org2', 'node2', { hosts: ['127.0.0.2'] })
    client = await createNodeCertificate('org2', 'node2', { hosts: ['127.0.0.2'] })
    server = await startP2pServer({ host: '127.0.0.3', port: await freePort(), cert: onHost3.cert, key: onHost3.key })
    misnamed = await startP2pServer({ host: '127.0.0.3', port: await freePort(), cert: namingHost2.cert, key: namingHost2.key })
    server.trust([client.cert])
    misnamed.trust([client.cert])
  })
  after(async () => {
    await server?.close()
    await misnamed?.close()
  })

  it('IP addresses go in as iPAddress entries (IPv4 and IPv6), names as dNSName entries, loopback by default', async () => {
    expect(new X509Certificate(onHost3.cert).subjectAltName).to.equal('IP Address:127.0.0.3')
    const several = await createNodeCertificate('o', 'n', { hosts: ['member1.example.com', '10.1.2.3', '::1', '[2001:db8::1:0:7]'] })
    expect(new X509Certificate(several.cert).subjectAltName).to.equal('DNS:member1.example.com, IP Address:10.1.2.3, IP Address:0:0:0:0:0:0:0:1, IP Address:2001:DB8:0:0:0:1:0:7')
    expect(new X509Certificate((await createNodeCertificate('o', 'n')).cert).subjectAltName).to.equal('IP Address:127.0.0.1, DNS:localhost')
    expect(new X509Certificate(several.cert).checkHost('member1.example.com')).to.equal('member1.example.com')
    expect(new X509Certificate(several.cert).checkIP('10.1.2.3')).to.equal('10.1.2.3')
  })

  it('refuses a host that is neither a name nor an address, and an empty list', async () => {
    for (const bad of ['a b', 'http://x', '', '-x.example']) {
      let err: Error | undefined
      await createNodeCertificate('o', 'n', { hosts: [bad] }).catch((e: Error) => (err = e))
      expect(err?.message, bad).to.match(/not a host name or IP address/)
    }
    let empty: Error | undefined
    await createNodeCertificate('o', 'n', { hosts: [] }).catch((e: Error) => (empty = e))
    expect(empty?.message).to.match(/at least one host/)
  })

  it('a client that checks host names reaches the endpoint on 127.0.0.3 over mutual TLS, and refuses a certificate naming 127.0.0.2 there', async () => {
    expect(server.url).to.match(/^https:\/\/127\.0\.0\.3:/)
    expect(await ping(server.url, client, onHost3.cert)).to.equal('status 204')
    expect(await ping(misnamed.url, client, namingHost2.cert)).to.equal('during the handshake: ERR_TLS_CERT_ALTNAME_INVALID')
  })
})

describe('the p2p endpoint refuses a certificate a trusted member signed for another org', () => {
  let orgA: TlsMaterial // the server
  let orgB: TlsMaterial // the org being impersonated (a registered member)
  let orgM: TlsMaterial // the trusted but malicious member
  let forged: TlsMaterial // O=orgB, CN=nodeB, issued and signed by orgM
  let server: P2pServer
  const seen: string[] = []

  before(async () => {
    orgA = await createNodeCertificate('orgA', 'nodeA')
    orgB = await createNodeCertificate('orgB', 'nodeB')
    orgM = await createNodeCertificate('orgM', 'nodeM')
    forged = await issueCertificate(orgM, 'orgB', 'nodeB')
    server = await startP2pServer({
      host: '127.0.0.1',
      port: await freePort(),
      cert: orgA.cert,
      key: orgA.key,
      handler: (_req, res, peer) => {
        seen.push(peer.org)
        res.writeHead(204).end()
      },
    })
    server.trust([orgB.cert, orgM.cert])
  })
  after(async () => server?.close())

  it('builds the forgery: subject O=orgB, CN=nodeB, signed by orgM, yet not a registered certificate', () => {
    const x = new X509Certificate(forged.cert)
    expect(x.subject).to.contain('O=orgB')
    expect(x.subject).to.contain('CN=nodeB')
    expect(x.issuer).to.equal(new X509Certificate(orgM.cert).subject)
    expect(x.verify(new X509Certificate(orgM.cert).publicKey)).to.equal(true)
    expect(peerIdFromCertificate(forged.cert)).to.equal('orgB')
    expect(x.fingerprint256).to.not.equal(new X509Certificate(orgB.cert).fingerprint256)
    expect(x.fingerprint256).to.not.equal(new X509Certificate(orgM.cert).fingerprint256)
  })

  it("answers orgM's own certificate, and refuses with 401 the orgB certificate orgM signed (it passes TLS)", async () => {
    expect((await get(server.url, '/api/v1/ping', orgM, orgA.cert)).status).to.equal(204)

    // The forged certificate chains to orgM's, which the server trusts, so the TLS handshake succeeds and the
    // answer is an HTTP status: only the registered-fingerprint check stands between orgM and posing as orgB.
    for (const path of ['/api/v1/ping', '/api/v1/messages']) {
      const r = await get(server.url, path, forged, orgA.cert)
      expect(r.status, `GET ${path}`).to.equal(401)
      expect(r.contentType).to.match(/^application\/json/)
      const body = JSON.parse(r.body) as { error?: unknown }
      expect(body.error).to.be.a('string')
      expect(body.error).to.match(/not one a registered node published/)
    }
    expect(seen, 'the handler must never see the forged sender').to.not.include('orgB')

    expect((await get(server.url, '/api/v1/messages', orgM, orgA.cert)).status).to.equal(204)
    expect(seen).to.deep.equal(['orgM'])
  })
})

function get(url: string, path: string, client: TlsMaterial, ca: string): Promise<{ status: number; contentType: string; body: string }> {
  return new Promise((res, rej) => {
    const req = https.request(`${url}${path}`, { method: 'GET', ca, cert: client.cert, key: client.key, agent: false }, (r) => {
      let body = ''
      r.setEncoding('utf8')
      r.on('data', (c: string) => (body += c))
      r.on('end', () => res({ status: r.statusCode ?? 0, contentType: String(r.headers['content-type'] ?? ''), body }))
    })
    req.on('error', rej)
    req.end()
  })
}

