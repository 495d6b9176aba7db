import { expect } from 'chai'
import { encodePinBatch } from '../../../../node/chain/abi.js'
import { newId, type BatchId, type Hash, type TxId } from '../../../../node/core/ids.js'
import { decodePendingPin, type PoolTransaction } from '../../../../network/rogue/pool.js'

describe('network/rogue/pool: pinBatch transactions read from the chain pool', () => {
  const contract = '0x5FbDB2315678afecb367f032d93F642f64180aa3'
  const args = { txId: newId<TxId>(), batchId: newId<BatchId>(), batchHash: 'ab'.repeat(32) as Hash, payloadRef: 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG', contexts: ['01'.repeat(32) as Hash, '02'.repeat(32) as Hash] }
  const tx = (over: Partial<PoolTransaction> = {}): PoolTransaction => ({ hash: '0xfeed', from: '0xABCDEF0000000000000000000000000000000001', to: contract.toLowerCase(), input: encodePinBatch(args), maxPriorityFeePerGas: '0x3b9aca00', ...over })

  it('decodes what the pin would pin, its signer and its tip', () => {
    expect(decodePendingPin(tx(), contract)).to.deep.equal({ txHash: '0xfeed', from: '0xabcdef0000000000000000000000000000000001', tip: 1_000_000_000n, ...args })
  })

  it('reads a legacy transaction’s gas price as its tip, and a private pin’s empty reference', () => {
    const input = encodePinBatch({ ...args, payloadRef: '' })
    const pin = decodePendingPin(tx({ input, maxPriorityFeePerGas: undefined, gasPrice: '0x10' }), contract)!
    expect(pin.tip).to.equal(16n)
    expect(pin.payloadRef).to.equal('')
  })

  it('leaves out transactions to other addresses, contract creations and other calls', () => {
    expect(decodePendingPin(tx({ to: '0x0000000000000000000000000000000000000001' }), contract)).to.equal(undefined)
    expect(decodePendingPin(tx({ to: null }), contract)).to.equal(undefined)
    expect(decodePendingPin(tx({ input: '0x' }), contract)).to.equal(undefined)
    expect(decodePendingPin(tx({ input: '0xdeadbeef' }), contract)).to.equal(undefined)
  })
})
