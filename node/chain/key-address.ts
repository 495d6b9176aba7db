import { createECDH } from 'node:crypto'
import { getAddress, keccak256, SigningKey, Wallet, type TransactionRequest } from 'ethers'

/**
 * The address of a secp256k1 private key (`0x` and 64 hex digits), lowercase, computed with Node's native crypto:
 * `new Wallet(key).address` multiplies the curve's generator in JavaScript, a few milliseconds a key while that code
 * is cold, which a member spent on its own key at every start and the network command on every member's, on the
 * path of the start. Throws, as ethers does, for a key that is not one.
 */
export function addressOfKey(privateKey: string): string {
  const hex = privateKey.startsWith('0x') ? privateKey.slice(2) : privateKey
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new TypeError('a private key is 32 bytes of hex')
  const ecdh = createECDH('secp256k1')
  ecdh.setPrivateKey(Buffer.from(hex, 'hex'))
  return `0x${keccak256(ecdh.getPublicKey().subarray(1)).slice(-40)}`
}

/** What signing a transaction needs of a key (an ethers Wallet is one). */
export interface TxSigner {
  /** Checksummed, as a Wallet's. */
  readonly address: string
  readonly signingKey: SigningKey
  signTransaction(tx: TransactionRequest): Promise<string>
}

/**
 * A signer for `privateKey` whose address is derived natively and whose public key is never computed: an EIP-1559
 * signature needs only the private key. A legacy transaction, rare, is signed by an ethers Wallet made then.
 */
export function keySigner(privateKey: string): TxSigner {
  return {
    address: getAddress(addressOfKey(privateKey)),
    signingKey: new SigningKey(privateKey),
    signTransaction: (tx) => new Wallet(privateKey).signTransaction(tx),
  }
}
