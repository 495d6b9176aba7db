import { Interface } from 'ethers'
import { parseAddress, parseHash } from '../core/ids.js'
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

export function encodePinBatch(req: PinBatchRequest): string {
  return batchPinInterface.encodeFunctionData('pinBatch', [
    uuidsBytes32(req.txId, req.batchId),
    '0x' + parseHash(req.batchHash, 'batchHash'),
    req.payloadRef,
    req.contexts.map((c, i) => '0x' + parseHash(c, `contexts[${i}]`)),
  ])
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

/** Decodes a BatchPin log; throws when the log is not one (the follower skips it and says so). */
export function decodeBatchPinLog(log: RpcLog): BatchPinEvent {
  const parsed = batchPinInterface.parseLog({ topics: log.topics, data: log.data })
  if (parsed === null || parsed.name !== 'BatchPin') throw new Error('not a BatchPin event')
  const a = parsed.args
  const blockNumber = Number(log.blockNumber)
  const txIndex = Number(log.transactionIndex)
  const logIndex = Number(log.logIndex)
  return {
    blockNumber,
    txIndex,
    logIndex,
    protocolId: protocolId(blockNumber, txIndex, logIndex),
    txHash: log.transactionHash.toLowerCase(),
    author: parseAddress(a.getValue('author'), 'author'),
    timestamp: Number(a.getValue('timestamp') as bigint),
    action: String(a.getValue('action')),
    ...splitUuids(String(a.getValue('uuids'))),
    batchHash: parseHash(a.getValue('batchHash'), 'batchHash'),
    payloadRef: String(a.getValue('payloadRef')),
    contexts: Array.from(a.getValue('contexts') as Iterable<unknown>).map((c, i) => parseHash(c, `contexts[${i}]`)),
  }
}
