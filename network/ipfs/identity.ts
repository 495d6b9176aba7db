import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { base58btc } from 'multiformats/bases/base58'
import { writeFileAtomic } from '../../node/core/atomic-file.js'

/** The node's libp2p-style identity, as `ipfs id` shows it. */
export interface PeerIdentity {
  /** Base58 peer ID of an Ed25519 key (`12D3KooW...`), parseable by any libp2p peer-id library. */
  id: string
  /** Base64 of the protobuf-encoded public key, Kubo's `PublicKey` field. */
  publicKey: string
}

const FILE = 'identity.json'

interface IdentityFile {
  PrivKey: string // base64 PKCS#8 DER of the Ed25519 private key
}

/**
 * libp2p encodes an Ed25519 public key as protobuf { Type: Ed25519 (1), Data: 32 bytes }; a key that small is
 * carried inline in the peer ID as an "identity" multihash (code 0x00, length 0x24).
 */
function identityOf(privateKeyDer: Buffer): PeerIdentity {
  const priv = createPrivateKey({ key: privateKeyDer, format: 'der', type: 'pkcs8' })
  const spki = createPublicKey(priv).export({ format: 'der', type: 'spki' })
  const raw = spki.subarray(spki.length - 32)
  const protobuf = Buffer.concat([Buffer.from([0x08, 0x01, 0x12, 0x20]), raw])
  const multihash = Buffer.concat([Buffer.from([0x00, protobuf.length]), protobuf])
  return { id: base58btc.baseEncode(multihash), publicKey: protobuf.toString('base64') }
}

/**
 * Loads `<dir>/identity.json`, creating it on first start, so the peer ID survives restarts. A file that exists
 * but cannot be read is an error, not a reason to mint a new identity behind the operator's back.
 */
export async function loadOrCreateIdentity(dir: string): Promise<PeerIdentity> {
  const path = join(dir, FILE)
  let text: string | undefined
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  if (text !== undefined) {
    try {
      const parsed = JSON.parse(text) as Partial<IdentityFile>
      if (typeof parsed.PrivKey !== 'string') throw new Error('no PrivKey')
      return identityOf(Buffer.from(parsed.PrivKey, 'base64'))
    } catch (err) {
      throw new Error(`cannot read the IPFS identity in ${path}: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  const { privateKey } = generateKeyPairSync('ed25519')
  const der = privateKey.export({ format: 'der', type: 'pkcs8' })
  const file: IdentityFile = { PrivKey: der.toString('base64') }
  // Atomic and durable, so a crash never leaves a half-written identity that would block the next start, and
  // a peer ID once announced is not lost to a power cut.
  await writeFileAtomic(path, JSON.stringify(file, null, 2) + '\n', { mode: 0o600 })
  return identityOf(der)
}
