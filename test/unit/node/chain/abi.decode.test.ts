import { expect } from 'chai'
import { randomBytes, randomUUID } from 'node:crypto'
import { BATCH_PIN_TOPIC, batchPinInterface, decodeBatchPinLog, type RpcLog } from '../../../../node/chain/abi.js'
import { uuidsBytes32 } from '../../../../node/core/hashes.js'
import type { BatchId, TxId } from '../../../../node/core/ids.js'

/** A BatchPin log as ethers' ABI coder writes it: the reference the node's own decoder must agree with. */
function encoded(values: { author: string; timestamp: bigint; action: string; uuids: string; batchHash: string; payloadRef: string; contexts: string[] }): RpcLog {
  const { data, topics } = batchPinInterface.encodeEventLog('BatchPin', [values.author, values.timestamp, values.action, values.uuids, values.batchHash, values.payloadRef, values.contexts])
  return { address: '0x' + '11'.repeat(20), topics, data, blockNumber: '0x2a', transactionHash: '0x' + 'ab'.repeat(32), transactionIndex: '0x1', logIndex: '0x3' }
}

const hex32 = (): string => '0x' + randomBytes(32).toString('hex')

describe('BatchPin log decoding', () => {
  for (const [what, contexts, payloadRef, action] of [
    ['no contexts, empty reference', 0, '', 'firefly:batch_pin'],
    ['one context', 1, 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG', 'firefly:batch_pin'],
    ['200 contexts', 200, 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG', 'firefly:batch_pin'],
    ['a network action with a long multi-byte payload', 0, 'é'.repeat(100) + '履歴書', 'firefly:terminate'],
  ] as const) {
    it(`agrees with ethers' decoder: ${what}`, () => {
      const txId = randomUUID() as TxId
      const batchId = randomUUID() as BatchId
      const values = { author: '0x' + randomBytes(20).toString('hex'), timestamp: 1_700_000_000n, action, uuids: uuidsBytes32(txId, batchId), batchHash: hex32(), payloadRef, contexts: Array.from({ length: contexts }, hex32) }
      const d = decodeBatchPinLog(encoded(values))
      expect(d).to.deep.equal({
        blockNumber: 42,
        txIndex: 1,
        logIndex: 3,
        protocolId: '000000000042/000001/000003',
        txHash: '0x' + 'ab'.repeat(32),
        author: values.author,
        timestamp: 1_700_000_000,
        action,
        txId,
        batchId,
        batchHash: values.batchHash.slice(2),
        payloadRef,
        contexts: values.contexts.map((c) => c.slice(2)),
      })
    })
  }

  it('refuses logs that are not BatchPin or not well formed, with a reason', () => {
    const good = encoded({ author: '0x' + '22'.repeat(20), timestamp: 1n, action: 'firefly:batch_pin', uuids: hex32(), batchHash: hex32(), payloadRef: 'Qm', contexts: [hex32(), hex32()] })
    const bad = (patch: Partial<RpcLog>): string => {
      try {
        decodeBatchPinLog({ ...good, ...patch })
      } catch (err) {
        return (err as Error).message
      }
      return 'decoded'
    }
    expect(bad({ topics: ['0x' + '00'.repeat(32)] })).to.equal('not a BatchPin event')
    expect(bad({ topics: [] })).to.equal('not a BatchPin event')
    expect(bad({ data: good.data.slice(0, 2 + 64 * 6) })).to.match(/malformed data/)
    expect(bad({ data: good.data.slice(0, -2) })).to.match(/malformed data/)
    expect(bad({ data: good.data.slice(0, -64) })).to.match(/contexts out of bounds/)
    // The contexts offset (head word 6) pointing past the end of the data.
    const data = good.data.slice(2)
    expect(bad({ data: '0x' + data.slice(0, 6 * 64) + (0xffff).toString(16).padStart(64, '0') + data.slice(7 * 64) })).to.match(/out of bounds/)
    // An offset too large to be a number this side of 2^53.
    expect(bad({ data: '0x' + data.slice(0, 2 * 64) + 'f'.repeat(64) + data.slice(3 * 64) })).to.match(/out of range/)
    expect(bad({ data: '0x' + 'ff'.repeat(32) + data.slice(64) })).to.match(/not an address/)
    expect(BATCH_PIN_TOPIC).to.equal(good.topics[0])
  })
})
