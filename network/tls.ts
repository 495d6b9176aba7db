import 'reflect-metadata'
import { webcrypto, X509Certificate } from 'node:crypto'
import * as x509 from '@peculiar/x509'

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0])

export interface TlsMaterial {
  /** PEM certificate; self-signed, so it is its own CA for the peer that trusts it. */
  cert: string
  /** PEM PKCS#8 private key. */
  key: string
}

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const

/**
 * A member node's certificate for the peer-to-peer exchange. The subject names the org (O) and the node (CN),
 * because the receiving side identifies the sending org from the client certificate, as FireFly's data exchange does.
 * The SAN covers loopback so that hostname verification passes for https://127.0.0.1:<port>.
 */
export async function createNodeCertificate(org: string, node: string, validYears = 10): Promise<TlsMaterial> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair
  const notBefore = new Date(Date.now() - 60_000)
  const notAfter = new Date(notBefore.getTime() + validYears * 365 * 24 * 3600 * 1000)
  const name = `CN=${escapeRdn(node)}, O=${escapeRdn(org)}`
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(16))).toString('hex').replace(/^[89a-f]/, '1'),
    name,
    notBefore,
    notAfter,
    keys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: 'ip', value: '127.0.0.1' },
        { type: 'dns', value: 'localhost' },
      ]),
    ],
  })
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)
  return { cert: cert.toString('pem') + '\n', key: toPem('PRIVATE KEY', new Uint8Array(pkcs8)) }
}

/** The org named by a certificate's subject O (with `-OU` appended when present, as FireFly's data exchange does). */
export function peerIdFromCertificate(pem: string): string {
  const subject = new X509Certificate(pem).subject
  const fields = new Map(subject.split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]))
  const o = fields.get('O')
  if (!o) throw new Error('certificate subject has no O (organization)')
  const ou = fields.get('OU')
  return ou ? `${o}-${ou}` : o
}

function toPem(label: string, der: Uint8Array): string {
  const b64 = Buffer.from(der).toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`
}

function escapeRdn(v: string): string {
  return v.replace(/([,+"\\<>;=])/g, '\\$1')
}
