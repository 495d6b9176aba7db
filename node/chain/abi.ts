import { Interface } from 'ethers'
import { parseAddress, parseHash, type Hash } from '../core/ids.js'
import { splitUuids, uuidsBytes32 } from '../core/hashes.js'
import type { PinBatchRequest } from './types.js'
import { type BatchPinEvent } from '../model/index.js'

/**
 * FireFly's BatchPin contract, network version 2, as the node needs it. Written out rather than read from the
 * Hardhat artifact: a member node talks to a contract someone else deployed, and only this ABI is the contract.
 */
export const batchPinInterface = new Interface([
  'event BatchPin(address author, uint256 timestamp, string action, bytes32 uuids, bytes32 batchHash, string payloadRef, bytes32[] contexts)',
  'function pinBatch(bytes32 uuids, bytes32 batchHash, string payloadRef, bytes32[] contexts)',
  'function networkAction(string action, string payload)',
  'function networkVersion() pure returns (uint8)',
])

/** topic0 of BatchPin: the only topic, since nothing in the event is indexed. */
export const BATCH_PIN_TOPIC = batchPinInterface.getEvent('BatchPin')!.topicHash

const PIN_BATCH_SELECTOR = Buffer.from(batchPinInterface.getFunction('pinBatch')!.selector.slice(2), 'hex')

/**
 * pinBatch's calldata, ABI-encoded into one Buffer: the four head words, then payloadRef (length, padded bytes), then
 * contexts (count, words). Written out because the generic encoder spent about a millisecond on 200 contexts, on the
 * sender's busy path; test/unit/node/chain/abi.encode.test.ts holds it byte-equal to ethers' encodeFunctionData.
 */
export function encodePinBatchBytes(req: PinBatchRequest): Buffer {
  const uuids = uuidsBytes32(req.txId, req.batchId)
  const batchHash = parseHash(req.batchHash, 'batchHash')
  const contexts = req.contexts.map((c, i) => parseHash(c, `contexts[${i}]`))
  const refLength = Buffer.byteLength(req.payloadRef, 'utf8')
  const refWords = Math.ceil(refLength / 32)
  const contextsAt = 4 * 32 + 32 + refWords * 32
  const out = Buffer.alloc(4 + contextsAt + 32 + contexts.length * 32)
  PIN_BATCH_SELECTOR.copy(out, 0)
  const word = (i: number): number => 4 + i * 32
  out.write(uuids.slice(2), word(0), 'hex')
  out.write(batchHash, word(1), 'hex')
  out.writeUInt32BE(4 * 32, word(2) + 28)
  out.writeUInt32BE(contextsAt, word(3) + 28)
  out.writeUInt32BE(refLength, word(4) + 28)
  out.write(req.payloadRef, word(5), 'utf8')
  const count = word(contextsAt / 32)
  out.writeUInt32BE(contexts.length, count + 28)
  for (let k = 0; k < contexts.length; k++) out.write(contexts[k]!, count + 32 + k * 32, 'hex')
  return out
}

export function encodePinBatch(req: PinBatchRequest): string {
  return '0x' + encodePinBatchBytes(req).toString('hex')
}

export function encodeNetworkVersionCall(): string {
  return batchPinInterface.encodeFunctionData('networkVersion', [])
}

export function decodeNetworkVersion(result: string): number {
  return Number(batchPinInterface.decodeFunctionResult('networkVersion', result)[0])
}

/** A log as `eth_getLogs` returns it. */
export interface RpcLog {
  address: string
  topics: string[]
  data: string
  blockNumber: string
  transactionHash: string
  transactionIndex: string
  logIndex: string
  removed?: boolean
}

export function protocolId(blockNumber: number, txIndex: number, logIndex: number): string {
  return `${String(blockNumber).padStart(12, '0')}/${String(txIndex).padStart(6, '0')}/${String(logIndex).padStart(6, '0')}`
}

/**
 * Decodes a BatchPin log. Its data is the ABI encoding of (address, uint256, string, bytes32, bytes32, string,
 * bytes32[]), read here directly: a generic decoder spent more on a 200-context batch than storing its pins did.
 * Anything out of shape throws (the follower skips the log and says so).
 */
export function decodeBatchPinLog(log: RpcLog): BatchPinEvent {
  if (log.topics[0]?.toLowerCase() !== BATCH_PIN_TOPIC) throw new Error('not a BatchPin event')
  const hex = log.data.startsWith('0x') ? log.data.slice(2) : log.data
  if (!/^(?:[0-9a-fA-F]{64})*$/.test(hex) || hex.length < 7 * 64) throw new Error('not a BatchPin event: malformed data')
  const word = (i: number): string => hex.slice(i * 64, i * 64 + 64).toLowerCase()
  const uint = (i: number): number => {
    const w = word(i)
    if (!/^0{50}/.test(w)) throw new Error('not a BatchPin event: an offset or length out of range')
    return parseInt(w.slice(50), 16)
  }
  const words = hex.length / 64
  /** The dynamic value at the byte offset in head word `i`: its length word, then its content. */
  const tail = (i: number): { at: number; length: number } => {
    const offset = uint(i)
    if (offset % 32 !== 0 || offset / 32 >= words) throw new Error('not a BatchPin event: a dynamic value out of bounds')
    const at = offset / 32
    return { at: at + 1, length: uint(at) }
  }
  const text = (i: number): string => {
    const { at, length } = tail(i)
    if (at + Math.ceil(length / 32) > words) throw new Error('not a BatchPin event: a string out of bounds')
    return Buffer.from(hex.slice(at * 64, at * 64 + length * 2), 'hex').toString('utf8')
  }
  const author = word(0)
  if (!/^0{24}/.test(author)) throw new Error('not a BatchPin event: author is not an address')
  const ctx = tail(6)
  if (ctx.at + ctx.length > words) throw new Error('not a BatchPin event: contexts out of bounds')
  const contexts = new Array<Hash>(ctx.length)
  for (let k = 0; k < ctx.length; k++) contexts[k] = word(ctx.at + k) as Hash
  const blockNumber = Number(log.blockNumber)
  const txIndex = Number(log.transactionIndex)
  const logIndex = Number(log.logIndex)
  return {
    blockNumber,
    txIndex,
    logIndex,
    protocolId: protocolId(blockNumber, txIndex, logIndex),
    txHash: log.transactionHash.toLowerCase(),
    author: parseAddress('0x' + author.slice(24), 'author'),
    timestamp: Number(BigInt('0x' + word(1))),
    action: text(2),
    ...splitUuids(word(3)),
    batchHash: word(4) as Hash,
    payloadRef: text(5),
    contexts,
  }
}
