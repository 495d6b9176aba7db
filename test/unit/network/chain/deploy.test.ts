import { expect } from 'chai'
import { deployBatchPin, fundAccounts, fundAndDeploy, predictDeployment } from '../../../../network/chain/deploy.js'
import { rpcMethod, rpcResult, scriptedEndpoint, type ScriptedEndpoint } from '../../../support/scripted-server.js'

/**
 * Deploying and funding from account #0 against a scripted chain that answers oddly: a nonce not the one predicted,
 * too little ether, a reverted or contract-less receipt, a contract at another address. The happy path runs on the
 * real chain (test/chain, every network start).
 */
describe('network/chain/deploy: what a deployment or a funding refuses', () => {
  let chain: ScriptedEndpoint
  let state: { nonce: number; balanceWei: bigint; receipt: Record<string, unknown> | null }

  before(async () => {
    chain = await scriptedEndpoint()
  })

  beforeEach(() => {
    state = { nonce: 0, balanceWei: 10n ** 21n, receipt: { status: '0x1', blockNumber: '0x1', contractAddress: predictDeployment(0).address } }
    chain.requests.length = 0
    chain.answer((r) => {
      const m = rpcMethod(r)
      if (m === 'eth_chainId') return rpcResult(r, '0x7a69')
      if (m === 'eth_getTransactionCount') return rpcResult(r, `0x${state.nonce.toString(16)}`)
      if (m === 'eth_getBalance') return rpcResult(r, `0x${state.balanceWei.toString(16)}`)
      if (m === 'eth_getBlockByNumber') return rpcResult(r, { baseFeePerGas: '0x3b9aca00' })
      if (m === 'eth_maxPriorityFeePerGas') return rpcResult(r, '0x1')
      if (m === 'eth_estimateGas') return rpcResult(r, '0x100000')
      if (m === 'eth_sendRawTransaction') return rpcResult(r, '0x' + 'ab'.repeat(32))
      if (m === 'eth_getTransactionReceipt') return rpcResult(r, state.receipt)
      return rpcResult(r, true)
    })
  })

  after(() => chain.close())

  async function failure(p: Promise<unknown>): Promise<string> {
    try {
      await p
    } catch (err) {
      return (err as Error).message
    }
    return expect.fail('expected a failure')
  }

  const sent = (): number => chain.requests.filter((r) => rpcMethod(r) === 'eth_sendRawTransaction').length

  it('predicts the address from account #0\'s nonce alone', () => {
    expect(predictDeployment(2)).to.deep.equal({ address: predictDeployment(2).address, nonce: 2, block: 1 })
    expect(predictDeployment(2).address).not.to.equal(predictDeployment(0).address)
    expect(predictDeployment(0).address).to.equal('0x5fbdb2315678afecb367f032d93f642f64180aa3')
  })

  it('refuses to fund and deploy on a chain whose account #0 has sent before, sending nothing', async () => {
    state.nonce = 1
    expect(await failure(fundAndDeploy(chain.url, ['0x' + '22'.repeat(20)], '1', predictDeployment(1)))).to.equal(
      `cannot fund and deploy BatchPin at the predicted ${predictDeployment(1).address}: account #0 has nonce 1 on ${chain.url}, and 1 account(s) to fund before the deployment (nonce 1)`,
    )
    expect(sent()).to.equal(0)
  })

  it('refuses to fund more than account #0 holds, sending nothing', async () => {
    state.balanceWei = 5n * 10n ** 17n
    expect(await failure(fundAccounts(chain.url, ['0x' + '22'.repeat(20), '0x' + '33'.repeat(20)], '1'))).to.equal(
      'account 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266 holds 0.5 ETH, not enough to fund 2 account(s) with 1 ETH each',
    )
    expect(sent()).to.equal(0)
  })

  it('fails a deployment from another nonce than predicted, a reverted one, one that made no contract, and one elsewhere', async () => {
    state.nonce = 3
    expect(await failure(deployBatchPin(chain.url, predictDeployment(0)))).to.match(/^cannot deploy BatchPin at the predicted 0x5fbdb.*has nonce 3 on .*, not 0 \(the chain is not the fresh one expected\)$/)
    expect(sent()).to.equal(0)
    state.nonce = 0
    state.receipt = { status: '0x0', blockNumber: '0x1' }
    expect(await failure(deployBatchPin(chain.url))).to.match(/^the BatchPin deployment \(0x[0-9a-f]{64}\) reverted$/)
    state.receipt = { status: '0x1', blockNumber: '0x1', contractAddress: null }
    expect(await failure(deployBatchPin(chain.url))).to.match(/^the BatchPin deployment \(0x[0-9a-f]{64}\) created no contract$/)
    state.receipt = { status: '0x1', blockNumber: '0x4', contractAddress: predictDeployment(0).address }
    expect(await failure(deployBatchPin(chain.url, predictDeployment(0)))).to.equal(
      `BatchPin was deployed at ${predictDeployment(0).address} in block 4, but the member configs were written for ${predictDeployment(0).address} from block 1`,
    )
    // A failure leaves the queue of account #0's transactions free for the next one.
    state.receipt = { status: '0x1', blockNumber: '0x1', contractAddress: '0x' + 'CC'.repeat(20) }
    expect(await deployBatchPin(chain.url)).to.deep.equal({ address: '0x' + 'cc'.repeat(20), block: 1 })
  })

  it('fails a funding and deployment mined elsewhere than predicted, with automine turned back on', async () => {
    state.receipt = { status: '0x1', blockNumber: '0x2', contractAddress: predictDeployment(1).address }
    expect(await failure(fundAndDeploy(chain.url, ['0x' + '22'.repeat(20)], '1', predictDeployment(1)))).to.equal(
      `BatchPin was deployed at ${predictDeployment(1).address} in block 2, but the member configs were written for ${predictDeployment(1).address} from block 1`,
    )
    const switches = chain.requests.filter((r) => rpcMethod(r) === 'evm_setAutomine').map((r) => (r.body as { params: boolean[] }).params[0])
    expect(switches).to.deep.equal([false, true])
    expect(sent()).to.equal(2)
  })
})
