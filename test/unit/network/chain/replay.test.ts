import { expect } from 'chai'
import { keccak256 } from 'ethers'
import type { EIP1193Provider } from 'hardhat/types/provider.js'
import { replayJournal } from '../../../../network/chain/replay.js'
import type { JournalBlock } from '../../../../network/chain/journal.js'

/**
 * Replaying the journal's blocks into a fresh Hardhat chain: what stops a start. The provider is the module's seam,
 * scripted here as a chain that mines what it is sent, or not; test/chain replays into a real one.
 */
class ScriptedChain {
  head = 0
  private pool: string[] = []
  readonly calls: string[] = []
  /** What to break: a send refused, a mine refused, a mine that mines nothing, or transactions mined in another order. */
  fault: 'send' | 'mine' | 'no-block' | 'reorder' | undefined
  blockHash = (n: number): string => `0xh${n}`
  /** The raw transactions of the last block mined. */
  private mined: string[] = []

  readonly provider = {
    request: async ({ method, params = [] }: { method: string; params?: readonly unknown[] }): Promise<unknown> => {
      this.calls.push(method)
      switch (method) {
        case 'eth_blockNumber':
          return `0x${this.head.toString(16)}`
        case 'evm_setAutomine':
          return true
        case 'eth_sendRawTransaction':
          if (this.fault === 'send') throw new Error('nonce too low')
          this.pool.push(params[0] as string)
          return keccak256(params[0] as string)
        case 'evm_mine':
          if (this.fault === 'mine') throw new Error('timestamp must be later')
          if (this.fault !== 'no-block') this.head++
          this.mined = this.fault === 'reorder' ? [...this.pool].reverse() : this.pool
          this.pool = []
          return '0x0'
        case 'eth_getBlockByNumber':
          return { number: `0x${this.head.toString(16)}`, hash: this.blockHash(this.head), transactions: this.mined.map((raw) => keccak256(raw)) }
        default:
          throw new Error(`unexpected ${method}`)
      }
    },
  } as unknown as EIP1193Provider
}

describe('network/chain/replay: the journal\'s blocks mined again', () => {
  const blocks: JournalBlock[] = [
    { n: 1, t: 100, h: '0xh1', txs: ['0x01', '0x02'] },
    { n: 2, t: 200, h: '0xh2', txs: [] },
  ]

  async function failure(p: Promise<unknown>): Promise<string> {
    try {
      await p
    } catch (err) {
      return (err as Error).message
    }
    return expect.fail('the replay went through')
  }

  it('mines each block with its transactions in order, counting blocks whose hash differs, and leaves mining off', async () => {
    const chain = new ScriptedChain()
    chain.blockHash = (n) => (n === 2 ? '0xother' : `0xh${n}`)
    const r = await replayJournal(chain.provider, blocks)
    expect({ blocks: r.blocks, hashMismatches: r.hashMismatches, mined: [...r.mined] }).to.deep.equal({ blocks: 2, hashMismatches: 1, mined: [keccak256('0x01'), keccak256('0x02')] })
    expect(chain.calls.filter((c) => c === 'evm_setAutomine')).to.have.length(1)
  })

  it('refuses a journal that does not start after the chain\'s head, or skips a block', async () => {
    const chain = new ScriptedChain()
    chain.head = 1
    expect(await failure(replayJournal(chain.provider, blocks))).to.equal('chain journal: expected block 2, found block 1')
    expect(await failure(replayJournal(new ScriptedChain().provider, [blocks[0]!, { ...blocks[1]!, n: 3 }]))).to.equal('chain journal: expected block 2, found block 3')
  })

  it('names the block whose transaction or mining the chain refuses, one it did not mine, and transactions mined in another order', async () => {
    const cases: [ScriptedChain['fault'], string][] = [
      ['send', 'chain journal: block 1: nonce too low'],
      ['mine', 'chain journal: block 1: timestamp must be later'],
      ['no-block', 'chain journal: replaying block 1 did not mine it'],
      ['reorder', `chain journal: replaying block 1 mined 2 transactions [${keccak256('0x02')}, ${keccak256('0x01')}], not the 2 recorded [${keccak256('0x01')}, ${keccak256('0x02')}] in their order`],
    ]
    for (const [fault, message] of cases) {
      const chain = new ScriptedChain()
      chain.fault = fault
      expect(await failure(replayJournal(chain.provider, blocks))).to.equal(message)
    }
  })
})
