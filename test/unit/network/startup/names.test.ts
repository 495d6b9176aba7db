import { expect } from 'chai'
import { Wallet } from 'ethers'
import { TempDirs } from '../../../support/db/helpers.js'
import { ChainJournal } from '../../../../network/chain/journal.js'
import { claimedNames, claimedNamesError } from '../../../../network/startup/names.js'
import { encodePinBatch } from '../../../../node/chain/abi.js'
import { broadcastContext, identityTopic, sha256Hex } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type TxId } from '../../../../node/core/ids.js'

const CONTRACT = '0x' + '12'.repeat(20)
const OTHER_CONTRACT = '0x' + '34'.repeat(20)

/** The names a growing network's new members would claim, looked up in the chain's journal before anything starts. */
describe('network start-up: names already pinned on chain', () => {
  const temp = new TempDirs()
  const squatter = Wallet.createRandom()
  let nonce = 0

  after(() => temp.cleanup())

  async function pinTx(contexts: string[], to = CONTRACT): Promise<string> {
    const data = encodePinBatch({ txId: newId<TxId>(), batchId: newId<BatchId>(), batchHash: sha256Hex('b') as never, payloadRef: 'QmNothing', contexts: contexts as never })
    return squatter.signTransaction({ to, data, nonce: nonce++, gasLimit: 500_000, gasPrice: 1, chainId: 1337 })
  }
  const ctx = (did: string) => broadcastContext(identityTopic(did))

  async function journal(blocks: string[][], pending: string[] = []): Promise<string> {
    const dir = await temp.make('names-')
    const j = new ChainJournal(dir)
    j.append([...blocks.map((txs, i) => ({ n: i + 1, t: 1, h: '0x00', txs })), ...pending.map((p) => ({ pending: p }))])
    j.close()
    return dir
  }

  it('finds an org name and a node name pinned by another account, in a block or pending, and names them in its refusal', async () => {
    const dir = await journal([[await pinTx([sha256Hex('orders'), ctx('did:firefly:org/org3')])]], [await pinTx([ctx('did:firefly:node/node3')])])
    const claimed = claimedNames(dir, CONTRACT, [{ org: 'org3', node: 'node3' }])
    expect(claimed.map((c) => [c.did, c.by, c.block])).to.deep.equal([
      ['did:firefly:org/org3', squatter.address.toLowerCase(), 1],
      ['did:firefly:node/node3', squatter.address.toLowerCase(), 'pending'],
    ])
    const message = claimedNamesError(claimed).message
    expect(message).to.contain('did:firefly:org/org3 is already pinned on chain by ' + squatter.address.toLowerCase()).and.to.contain('Nothing was started')
  })

  it('finds nothing for names no pin carries, nor for pins sent to another contract', async () => {
    const dir = await journal([[await pinTx([ctx('did:firefly:org/org4')], OTHER_CONTRACT), await pinTx([ctx('did:firefly:org/org1')])]])
    expect(claimedNames(dir, CONTRACT, [{ org: 'org4', node: 'node4' }])).to.deep.equal([])
  })

  it('finds nothing in a folder whose chain has no journal', async () => {
    expect(claimedNames(await temp.make('names-empty-'), CONTRACT, [{ org: 'org3', node: 'node3' }])).to.deep.equal([])
  })
})
