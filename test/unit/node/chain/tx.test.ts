import { expect } from 'chai'
import { randomBytes } from 'node:crypto'
import { Transaction } from 'ethers'
import { keySigner } from '../../../../node/chain/key-address.js'
import { RpcError } from '../../../../node/chain/rpc.js'
import { feeFields, isNonceError, priorityFee, signTransaction } from '../../../../node/chain/tx.js'
import { ScriptedRpc } from '../../../support/scripted-rpc.js'

const wallet = keySigner('0x' + randomBytes(32).toString('hex'))

describe('transactions: pricing and signing', () => {
  it('prices with a legacy gas price on a chain without a base fee, and signs a legacy transaction', async () => {
    const rpc = new ScriptedRpc((m) => (m === 'eth_getBlockByNumber' ? { number: '0x1' } : m === 'eth_gasPrice' ? '0x77' : '0x5208'))
    const fees = await feeFields(rpc)
    expect(fees).to.deep.equal({ type: 0, gasPrice: 0x77n })
    const signed = await signTransaction(rpc, wallet, { chainId: 31337n, nonce: 4, to: '0x' + '22'.repeat(20), data: '0xabcd' }, fees)
    const tx = Transaction.from(signed.raw)
    expect(tx).to.include({ type: 0, gasPrice: 0x77n, nonce: 4, data: '0xabcd', from: wallet.address })
    // Estimated, with 20 % headroom, when no gas limit is given.
    expect(tx.gasLimit).to.equal((0x5208n * 12n) / 10n)
    expect(signed.hash).to.equal(tx.hash)
    expect(rpc.calls).to.deep.equal(['eth_getBlockByNumber', 'eth_gasPrice', 'eth_estimateGas'])
  })

  it('estimates a contract creation without a recipient, and prices it from the chain when no fees are given', async () => {
    const rpc = new ScriptedRpc((m) =>
      m === 'eth_getBlockByNumber' ? { baseFeePerGas: '0x10' } : m === 'eth_maxPriorityFeePerGas' ? '0x2' : '0x100',
    )
    const signed = await signTransaction(rpc, wallet, { chainId: 1n, nonce: 0, to: null, data: new Uint8Array([0x60, 0x00]), value: 5n })
    const tx = Transaction.from(signed.raw)
    expect(tx).to.include({ type: 2, to: null, value: 5n, maxFeePerGas: 2n * 0x10n + 2n, maxPriorityFeePerGas: 2n, data: '0x6000' })
    const estimate = rpc.params[rpc.calls.indexOf('eth_estimateGas')]![0] as Record<string, string>
    expect(estimate).to.deep.equal({ from: wallet.address, data: '0x6000', value: '0x5' })
  })

  it('refuses transaction data that is not hex bytes, as ethers would', async () => {
    const rpc = new ScriptedRpc(() => '0x1')
    const fees = { type: 2, maxFeePerGas: 10n, maxPriorityFeePerGas: 1n }
    for (const data of ['0xabc', 'abcd', '0xzz']) {
      let err: unknown
      await signTransaction(rpc, wallet, { chainId: 1n, nonce: 0, to: null, data, gasLimit: 21000n }, fees).catch((e: unknown) => (err = e))
      expect(err, data).to.be.instanceOf(TypeError)
      expect((err as Error).message).to.equal(`transaction data is not 0x-prefixed hex bytes: ${data}...`)
    }
  })

  it("tips 1 gwei on an endpoint without eth_maxPriorityFeePerGas, but passes on that it cannot be reached", async () => {
    const missing = new ScriptedRpc(() => {
      throw new RpcError('the method eth_maxPriorityFeePerGas does not exist', false, -32601)
    })
    expect(await priorityFee(missing)).to.equal(1_000_000_000n)
    const down = new ScriptedRpc(() => {
      throw new RpcError('cannot reach http://127.0.0.1:8545: ECONNREFUSED', true)
    })
    let err: unknown
    await priorityFee(down).catch((e: unknown) => (err = e))
    expect(err).to.be.instanceOf(RpcError).and.include({ transport: true })
  })

  it('tells a nonce refusal in each phrasing from other errors and from an unreachable endpoint', () => {
    for (const m of ['nonce too low', 'Nonce too high. Expected nonce to be 3', 'nonce has already been used', 'invalid nonce']) {
      expect(isNonceError(new RpcError(m, false)), m).to.equal(true)
    }
    expect(isNonceError(new RpcError('nonce too low', true))).to.equal(false)
    expect(isNonceError(new RpcError('insufficient funds', false))).to.equal(false)
    expect(isNonceError(new Error('nonce too low'))).to.equal(false)
  })
})
