import { createECDH, createHmac, pbkdf2Sync } from 'node:crypto'

/** The order of secp256k1's group: a private key is a whole number in [1, N). */
export const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
const HARDENED = 0x8000_0000

export interface HdAccountsConfig {
  mnemonic: string
  path: string
  initialIndex: number
  count: number
  passphrase: string
}

/**
 * The private keys Hardhat derives for its genesis accounts from an HD config (BIP39 seed, BIP32 path
 * `<path>/<initialIndex + i>`), computed with Node's native crypto. Hardhat's own derivation runs BIP39's
 * 2048 rounds of PBKDF2 in JavaScript once per account: for its 20 default accounts, about half a second
 * of the chain's start-up. Answers undefined for anything it does not handle exactly as Hardhat does (a
 * mnemonic of an unusual length, a malformed path), so that Hardhat derives, or reports, those itself.
 */
export function deriveHdPrivateKeys(cfg: HdAccountsConfig): string[] | undefined {
  // As Hardhat (trimmed) and @scure/bip39 (NFKD, a word count BIP39 allows) take the mnemonic.
  const mnemonic = cfg.mnemonic.trim().normalize('NFKD')
  if (![12, 15, 18, 21, 24].includes(mnemonic.split(' ').length)) return undefined
  if (!/^m(\/\d+'?)+\/?$/.test(cfg.path)) return undefined
  const seed = pbkdf2Sync(Buffer.from(mnemonic, 'utf8'), Buffer.from(`mnemonic${cfg.passphrase.normalize('NFKD')}`, 'utf8'), 2048, 64, 'sha512')
  let node = split(createHmac('sha512', 'Bitcoin seed').update(seed).digest())
  if (node === undefined) return undefined
  for (const segment of cfg.path.split('/').slice(1).filter((s) => s.length > 0)) {
    const index = segment.endsWith("'") ? Number(segment.slice(0, -1)) + HARDENED : Number(segment)
    if (!Number.isSafeInteger(index) || index >= 2 * HARDENED) return undefined
    node = child(node, index)
    if (node === undefined) return undefined
  }
  const keys: string[] = []
  for (let i = cfg.initialIndex; i < cfg.initialIndex + cfg.count; i++) {
    const account = child(node, i)
    if (account === undefined) return undefined
    keys.push(`0x${account.key.toString('hex')}`)
  }
  return keys
}

interface ExtendedKey {
  key: Buffer
  chainCode: Buffer
}

/** A BIP32 node from the 64 bytes of an HMAC: undefined for the (astronomically unlikely) invalid key. */
function split(i: Buffer, parent?: Buffer): ExtendedKey | undefined {
  const il = BigInt(`0x${i.subarray(0, 32).toString('hex')}`)
  if (il >= SECP256K1_N) return undefined
  const k = parent === undefined ? il : (il + BigInt(`0x${parent.toString('hex')}`)) % SECP256K1_N
  if (k === 0n) return undefined
  return { key: Buffer.from(k.toString(16).padStart(64, '0'), 'hex'), chainCode: i.subarray(32) }
}

/** BIP32 CKDpriv. */
function child(parent: ExtendedKey, index: number): ExtendedKey | undefined {
  const data = Buffer.alloc(37)
  if (index >= HARDENED) {
    parent.key.copy(data, 1) // 0x00 || ser256(k)
  } else {
    const ecdh = createECDH('secp256k1')
    ecdh.setPrivateKey(parent.key)
    ecdh.getPublicKey(null, 'compressed').copy(data, 0) // serP(point(k))
  }
  data.writeUInt32BE(index, 33)
  return split(createHmac('sha512', parent.chainCode).update(data).digest(), parent.key)
}
