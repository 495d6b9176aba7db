import { randomUUID } from 'node:crypto'
import { ParleyError } from './errors.js'

declare const brand: unique symbol
/** A string that has been checked to be a `T`: the compiler keeps the kinds of ids and hashes apart. */
export type Brand<T, B extends string> = T & { readonly [brand]: B }

export type MessageId = Brand<string, 'MessageId'>
export type DataId = Brand<string, 'DataId'>
export type BatchId = Brand<string, 'BatchId'>
export type TxId = Brand<string, 'TxId'>
export type EventId = Brand<string, 'EventId'>
export type DatatypeId = Brand<string, 'DatatypeId'>
export type IdentityId = Brand<string, 'IdentityId'>
export type SubscriptionId = Brand<string, 'SubscriptionId'>
export type OperationId = Brand<string, 'OperationId'>
export type Uuid = MessageId | DataId | BatchId | TxId | EventId | DatatypeId | IdentityId | SubscriptionId | OperationId

/** sha256 as 64 lowercase hex characters, no `0x`. */
export type Hash = Brand<string, 'Hash'>
/** A lowercase `0x`-prefixed 20-byte Ethereum address. */
export type Address = Brand<string, 'Address'>

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const HASH_RE = /^[0-9a-f]{64}$/
const ADDRESS_RE = /^0x[0-9a-f]{40}$/

export function newId<T extends Uuid>(): T {
  return randomUUID() as T
}

export function isUuid(s: unknown): boolean {
  // Ids in lowercase (every id this network makes) are tested as they are; only another case is lowered first.
  return typeof s === 'string' && (UUID_RE.test(s) || UUID_RE.test(s.toLowerCase()))
}

/** Parses a UUID from a caller (any case), answering 400 when it is not one. */
export function parseUuid<T extends Uuid>(s: unknown, what = 'id'): T {
  if (typeof s === 'string' && UUID_RE.test(s)) return s as T
  if (!isUuid(s)) throw new ParleyError('INVALID_ID', `${what} is not a valid UUID: ${JSON.stringify(s)}`)
  return (s as string).toLowerCase() as T
}

/** Parses a hash, accepting an optional `0x` and any case, as FireFly's Bytes32 does. */
export function parseHash(s: unknown, what = 'hash'): Hash {
  // The form hashes are stored and sent in (lowercase, no 0x) is taken as it is: one scan instead of three per hash.
  if (typeof s === 'string' && s.length === 64 && HASH_RE.test(s)) return s as Hash
  const hex = typeof s === 'string' ? s.replace(/^0x/i, '').toLowerCase() : ''
  if (!HASH_RE.test(hex)) throw new ParleyError('INVALID_FIELD', `${what} is not a 32-byte hex hash: ${JSON.stringify(s)}`)
  return hex as Hash
}

export function parseAddress(s: unknown, what = 'address'): Address {
  const a = typeof s === 'string' ? s.toLowerCase() : ''
  if (!ADDRESS_RE.test(a)) throw new ParleyError('INVALID_FIELD', `${what} is not an Ethereum address: ${JSON.stringify(s)}`)
  return a as Address
}
