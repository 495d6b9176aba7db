import { generateKeyPair, randomBytes, sign, X509Certificate, type KeyObject } from 'node:crypto'
import { isIP } from 'node:net'
import { promisify } from 'node:util'
import { bitString, boolean, explicit, implicit, objectIdentifier, octetString, sequence, set, time, unsignedInteger, utf8String } from './der.js'

export interface TlsMaterial {
  /** PEM certificate; self-signed, so it is its own CA for the peer that trusts it. */
  cert: string
  /** PEM PKCS#8 private key. */
  key: string
}

const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const

const extension = (oid: string, critical: boolean, value: Buffer): Buffer =>
  sequence(objectIdentifier(oid), ...(critical ? [boolean(true)] : []), octetString(value))

/**
 * A member node's certificate for the peer-to-peer exchange: P-256, ECDSA with SHA-256. The subject names the org (O)
 * and the node (CN), because the receiving side identifies the sending org from the client certificate, as FireFly's
 * data exchange does. The SAN names the hosts the p2p endpoint is reached at (`hosts`: IP addresses and DNS names;
 * loopback by default), so that a client that checks host names, as any TLS client but the exchange's own does
 * (it pins the registered certificate instead), accepts it at https://<host>:<port>.
 * It may sign certificates (CA), as a member could to pose as another org: the exchange must refuse those.
 */
export async function createNodeCertificate(org: string, node: string, opts: { hosts?: readonly string[]; validYears?: number } = {}): Promise<TlsMaterial> {
  const validYears = opts.validYears ?? 10
  const altNames = subjectAltNames(opts.hosts ?? DEFAULT_HOSTS)
  const { privateKey, publicKey } = await promisify(generateKeyPair)('ec', { namedCurve: 'P-256' })
  const notBefore = new Date(Date.now() - 60_000)
  const notAfter = new Date(notBefore.getTime() + validYears * 365 * 24 * 3600 * 1000)
  const name = sequence(set(sequence(objectIdentifier(OID.commonName), utf8String(node))), set(sequence(objectIdentifier(OID.organization), utf8String(org))))
  const algorithm = sequence(objectIdentifier(OID.ecdsaWithSha256))
  const serial = randomBytes(16)
  serial[0] = serial[0]! & 0x7f || 1 // positive, and 16 bytes long in DER's minimal form
  const tbs = sequence(
    explicit(0, unsignedInteger(Buffer.of(2))), // v3
    unsignedInteger(serial),
    algorithm,
    name,
    sequence(time(notBefore), time(notAfter)),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(
      3,
      sequence(
        extension(OID.basicConstraints, true, sequence(boolean(true))),
        // digitalSignature (bit 0), keyEncipherment (2), keyCertSign (5): 0b10100100, the last two bits unused.
        extension(OID.keyUsage, true, bitString(Buffer.of(0xa4), 2)),
        extension(OID.extKeyUsage, false, sequence(objectIdentifier(OID.serverAuth), objectIdentifier(OID.clientAuth))),
        extension(OID.subjectAltName, false, sequence(...altNames)),
      ),
    ),
  )
  const der = sequence(tbs, algorithm, bitString(sign('sha256', tbs, privateKey)))
  return { cert: toPem('CERTIFICATE', der), key: pkcs8Pem(privateKey) }
}

const DEFAULT_HOSTS = ['127.0.0.1', 'localhost'] as const

/** SAN entries: iPAddress [7] (4 or 16 bytes) for an IP address, dNSName [2] for a name. */
function subjectAltNames(hosts: readonly string[]): Buffer[] {
  if (hosts.length === 0) throw new Error('a node certificate needs at least one host name or address')
  return hosts.map((h) => {
    const bare = h.replace(/^\[(.*)\]$/, '$1')
    const family = isIP(bare)
    if (family === 4) return implicit(7, Buffer.from(bare.split('.').map(Number)))
    if (family === 6) return implicit(7, ipv6Bytes(bare))
    if (!/^(?=.{1,253}$)([a-z0-9*]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i.test(h)) throw new Error(`not a host name or IP address: ${JSON.stringify(h)}`)
    return implicit(2, Buffer.from(h.toLowerCase(), 'ascii'))
  })
}

/** The 16 bytes of an IPv6 address in any textual form Node accepts (`::` shortening, a dotted IPv4 tail). */
function ipv6Bytes(text: string): Buffer {
  let s = text
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s)
  if (v4) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number) as [number, number, number, number]
    s = `${s.slice(0, -v4[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = s.includes('::') ? (s.split('::') as [string, string]) : [s, undefined]
  const part = (x: string): string[] => (x === '' ? [] : x.split(':'))
  const groups = tail === undefined ? part(head) : [...part(head), ...Array<string>(8 - part(head).length - part(tail).length).fill('0'), ...part(tail)]
  const out = Buffer.alloc(16)
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2))
  return out
}

function pkcs8Pem(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }).toString()
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

