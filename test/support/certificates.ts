import 'reflect-metadata' // before @peculiar/x509 (tsyringe needs the polyfill), as network/tls.ts does
import { createPrivateKey, webcrypto } from 'node:crypto'
import * as x509 from '@peculiar/x509'
import type { TlsMaterial } from '../../network/tls.js'

/**
 * A certificate for `org`/`node` issued and signed by `issuer` (a member's own CA-capable certificate), as a member
 * could make one to pose as another org; usable as a client or a server certificate.
 */
export async function issueCertificate(issuer: TlsMaterial, org: string, node: string): Promise<TlsMaterial> {
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const
  const issuerDer = createPrivateKey(issuer.key).export({ type: 'pkcs8', format: 'der' })
  const signingKey = await webcrypto.subtle.importKey('pkcs8', issuerDer, alg, false, ['sign'])
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair
  const notBefore = new Date(Date.now() - 60_000)
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(16))).toString('hex').replace(/^[89a-f]/, '1'),
    subject: `CN=${node}, O=${org}`,
    issuer: new x509.X509Certificate(issuer.cert).subject,
    notBefore,
    notAfter: new Date(notBefore.getTime() + 365 * 24 * 3600 * 1000),
    signingKey,
    publicKey: keys.publicKey,
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: 'ip', value: '127.0.0.1' }]),
    ],
  })
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)
  return {
    cert: cert.toString('pem') + '\n',
    key: createPrivateKey({ key: Buffer.from(pkcs8), format: 'der', type: 'pkcs8' }).export({ type: 'pkcs8', format: 'pem' }).toString(),
  }
}
