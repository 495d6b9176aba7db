import { expect } from 'chai'
import { randomBytes, randomUUID } from 'node:crypto'
import { batchPinInterface, encodePinBatch, encodePinBatchBytes } from '../../../../node/chain/abi.js'
import { uuidsBytes32 } from '../../../../node/core/hashes.js'
import type { BatchId, Hash, TxId } from '../../../../node/core/ids.js'
import type { PinBatchRequest } from '../../../../node/chain/types.js'

const hash = (): Hash => randomBytes(32).toString('hex') as Hash

/** ethers' generic ABI coder: the reference the node's own pinBatch encoder must equal byte for byte. */
function reference(req: PinBatchRequest): string {
  return batchPinInterface.encodeFunctionData('pinBatch', [uuidsBytes32(req.txId, req.batchId), '0x' + req.batchHash, req.payloadRef, req.contexts.map((c) => '0x' + c)])
}

describe('pinBatch calldata encoding', () => {
  for (const [what, contexts, payloadRef] of [
    ['no contexts, empty reference', 0, ''],
    ['one context and a CID', 1, 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG'],
    ['200 contexts', 200, 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG'],
    ['a reference of exactly one word', 3, 'x'.repeat(32)],
    ['a reference one byte past a word', 3, 'x'.repeat(33)],
    ['a long multi-byte reference', 2, 'é'.repeat(100) + '履歴書'],
    ['all-zero hashes', 2, 'Q'],
  ] as const) {
    it(`equals ethers' encodeFunctionData: ${what}`, () => {
      const req: PinBatchRequest = {
        txId: randomUUID() as TxId,
        batchId: randomUUID() as BatchId,
        batchHash: what === 'all-zero hashes' ? ('0'.repeat(64) as Hash) : hash(),
        payloadRef,
        contexts: Array.from({ length: contexts }, () => (what === 'all-zero hashes' ? ('0'.repeat(64) as Hash) : hash())),
      }
      expect(encodePinBatch(req)).to.equal(reference(req))
      expect('0x' + encodePinBatchBytes(req).toString('hex')).to.equal(reference(req))
    })
  }

  it('accepts hashes with a 0x prefix or in upper case, as before', () => {
    const req: PinBatchRequest = { txId: randomUUID() as TxId, batchId: randomUUID() as BatchId, batchHash: hash(), payloadRef: 'Qm', contexts: [hash()] }
    const loose = { ...req, batchHash: ('0x' + req.batchHash.toUpperCase()) as Hash, contexts: [('0X' + req.contexts[0]!) as Hash] }
    expect(encodePinBatch(loose)).to.equal(reference(req))
  })

  it('refuses a malformed hash or id', () => {
    const req: PinBatchRequest = { txId: randomUUID() as TxId, batchId: randomUUID() as BatchId, batchHash: hash(), payloadRef: '', contexts: [] }
    expect(() => encodePinBatch({ ...req, batchHash: 'zz'.repeat(32) as Hash })).to.throw(/batchHash/)
    expect(() => encodePinBatch({ ...req, contexts: [hash(), 'ab' as Hash] })).to.throw(/contexts\[1\]/)
    expect(() => encodePinBatch({ ...req, batchId: 'nope' as BatchId })).to.throw(/batch id/)
  })
})
