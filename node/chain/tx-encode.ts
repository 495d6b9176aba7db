import { keccak256, type SigningKey } from 'ethers'

/**
 * EIP-1559 transactions built and signed with Buffers. A pinBatch carries a few kilobytes of calldata, and ethers'
 * Wallet.signTransaction walks it as hex several times (normalising, hashing, serialising, re-parsing for the hash):
 * that cost a sender milliseconds per batch. Only the fast primitives are borrowed from ethers (secp256k1 signing of a
 * digest, keccak256 of bytes); test/unit/node/chain/tx-encode.test.ts proves the bytes equal ethers' own.
 */

/** The fields of a type-2 transaction with an empty access list, the only kind the node sends. */
export interface Eip1559Tx {
  chainId: bigint
  nonce: number
  maxPriorityFeePerGas: bigint
  maxFeePerGas: bigint
  gasLimit: bigint
  /** `null` deploys a contract. */
  to: string | null
  value: bigint
  data: Uint8Array
}

const EMPTY = Buffer.alloc(0)
const MAX_UINT256 = (1n << 256n) - 1n
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/

/** An unsigned integer as RLP wants it: big-endian without leading zeros, zero as no bytes at all. */
export function uintBytes(n: bigint | number, what: string): Buffer {
  const v = BigInt(n)
  if (v < 0n || v > MAX_UINT256) throw new RangeError(`${what} is not a 256-bit unsigned integer: ${v}`)
  if (v === 0n) return EMPTY
  const hex = v.toString(16)
  return Buffer.from(hex.length % 2 === 0 ? hex : '0' + hex, 'hex')
}

/** The RLP prefix of a string (0x80) or list (0xc0) whose payload is `length` bytes long. */
function prefix(offset: 0x80 | 0xc0, length: number): Buffer {
  if (length <= 55) return Buffer.of(offset + length)
  const len = uintBytes(length, 'RLP length')
  return Buffer.concat([Buffer.of(offset + 55 + len.length), len])
}

function rlpString(b: Uint8Array): Buffer[] {
  if (b.length === 1 && b[0]! < 0x80) return [Buffer.from(b.buffer, b.byteOffset, 1)]
  return [prefix(0x80, b.length), Buffer.from(b.buffer, b.byteOffset, b.length)]
}

/** 0x02 || rlp([chainId, nonce, tip, maxFee, gas, to, value, data, accessList, (yParity, r, s)]). */
function serialize(tx: Eip1559Tx, sig?: { yParity: 0 | 1; r: Buffer; s: Buffer }): Buffer {
  if (!Number.isSafeInteger(tx.nonce)) throw new RangeError(`nonce is not an integer: ${tx.nonce}`)
  if (tx.to !== null && !ADDRESS_RE.test(tx.to)) throw new TypeError(`to is not an address: ${tx.to}`)
  const fields: Uint8Array[] = [
    uintBytes(tx.chainId, 'chainId'),
    uintBytes(tx.nonce, 'nonce'),
    uintBytes(tx.maxPriorityFeePerGas, 'maxPriorityFeePerGas'),
    uintBytes(tx.maxFeePerGas, 'maxFeePerGas'),
    uintBytes(tx.gasLimit, 'gasLimit'),
    tx.to === null ? EMPTY : Buffer.from(tx.to.slice(2), 'hex'),
    uintBytes(tx.value, 'value'),
    tx.data,
  ]
  const parts: Buffer[] = []
  for (const f of fields) parts.push(...rlpString(f))
  parts.push(Buffer.of(0xc0)) // the empty access list
  if (sig !== undefined) {
    parts.push(...rlpString(uintBytes(sig.yParity, 'yParity')), ...rlpString(stripZeros(sig.r)), ...rlpString(stripZeros(sig.s)))
  }
  let length = 0
  for (const p of parts) length += p.length
  return Buffer.concat([Buffer.of(0x02), prefix(0xc0, length), ...parts])
}

function stripZeros(b: Buffer): Buffer {
  let i = 0
  while (i < b.length && b[i] === 0) i++
  return b.subarray(i)
}

function hexBytes(hex: string): Buffer {
  return Buffer.from(hex.startsWith('0x') ? hex.slice(2) : hex, 'hex')
}

/** The signed transaction's bytes and hash (keccak256 of those bytes, as every client computes it). */
export function signEip1559(key: SigningKey, tx: Eip1559Tx): { raw: string; hash: string } {
  const sig = key.sign(keccak256(serialize(tx)))
  const raw = serialize(tx, { yParity: sig.yParity, r: hexBytes(sig.r), s: hexBytes(sig.s) })
  return { raw: '0x' + raw.toString('hex'), hash: keccak256(raw) }
}

/** The unsigned payload's digest, exported for the equality test against ethers' `unsignedHash`. */
export function unsignedHashEip1559(tx: Eip1559Tx): string {
  return keccak256(serialize(tx))
}
