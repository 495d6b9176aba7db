import { expect } from 'chai'
import { EventEmitter } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { keccak256 } from 'ethers'
import type { EIP1193Provider, RequestArguments } from 'hardhat/types/provider.js'
import { ChainJournal, type JournalRecord } from '../../../../network/chain/journal.js'
import { ChainRpcError, JournaledProvider, MAX_BLOCKS_PER_MINE } from '../../../../network/chain/journaled-provider.js'

/**
 * The journaling provider over a scripted inner chain (its seam): what it refuses, how a send the chain fails is
 * journaled still, and what a failure to journal does. test/chain runs it over Hardhat itself.
 */
class InnerChain extends EventEmitter {
  head = 0
  /** Raw transactions of each mined block, by number. */
  readonly blocks = new Map<number, string[]>()
  /** How a raw send goes: mined at once, or mined but reverted (an error answered). */
  send: 'mine' | 'revert' = 'mine'
  readonly asked: string[] = []

  async request({ method, params }: RequestArguments): Promise<unknown> {
    const p = (Array.isArray(params) ? params : []) as unknown[]
    this.asked.push(method)
    switch (method) {
      case 'eth_blockNumber':
        return `0x${this.head.toString(16)}`
      case 'eth_sendRawTransaction': {
        const raw = p[0] as string
        this.blocks.set(++this.head, [raw])
        if (this.send === 'revert') throw new Error('execution reverted')
        return keccak256(raw)
      }
      case 'eth_sendTransaction':
        // Signed by the chain itself and left in its pool.
        return '0x' + 'cd'.repeat(32)
      case 'evm_mine':
        this.blocks.set(++this.head, [])
        return '0x0'
      case 'eth_getBlockByNumber': {
        const n = p[0] === 'latest' ? this.head : Number(p[0])
        return { hash: `0xb${n}`, timestamp: `0x${(100 + n).toString(16)}`, transactions: (this.blocks.get(n) ?? []).map((raw) => keccak256(raw)) }
      }
      case 'eth_getTransactionByHash':
        return null
      default:
        return `answer to ${method}`
    }
  }
}

describe('network/chain/journaled-provider: a chain journaled as it mines', () => {
  let dir: string
  let inner: InnerChain
  let journal: ChainJournal
  let fatal: Error[]
  let provider: JournaledProvider

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'journaled-'))
    inner = new InnerChain()
    journal = new ChainJournal(dir)
    fatal = []
    provider = new JournaledProvider(inner as unknown as EIP1193Provider, journal, (err) => fatal.push(err))
  })

  afterEach(() => {
    journal.close()
    rmSync(dir, { recursive: true, force: true })
  })

  async function rpcError(p: Promise<unknown>): Promise<ChainRpcError> {
    try {
      await p
    } catch (err) {
      expect(err).to.be.instanceOf(ChainRpcError)
      return err as ChainRpcError
    }
    return expect.fail('the request was answered')
  }

  const records = (): JournalRecord[] => {
    const r = journal.read()
    return [...r.blocks, ...r.pending.map((pending) => ({ pending }))]
  }

  it('refuses what would make the history unreplayable, and passes reads through', async () => {
    const e = await rpcError(provider.request({ method: 'hardhat_setBalance', params: ['0x1', '0x1'] }))
    expect([e.code, e.message]).to.deep.equal([-32004, 'hardhat_setBalance is refused: this chain is journaled so that it survives restarts, and hardhat_setBalance would make its history unreplayable. Send signed transactions (eth_sendRawTransaction) instead.'])
    expect(await provider.request({ method: 'eth_chainId' })).to.equal('answer to eth_chainId')
    expect(await provider.request({ method: 'evm_increaseTime', params: [5] })).to.equal('answer to evm_increaseTime')
    expect(inner.asked).to.deep.equal(['eth_chainId', 'evm_increaseTime'])
  })

  it('refuses hardhat_mine past its limit or with a count that is no quantity, mining nothing', async () => {
    const tooMany = await rpcError(provider.request({ method: 'hardhat_mine', params: [`0x${(MAX_BLOCKS_PER_MINE + 1).toString(16)}`] }))
    expect([tooMany.code, tooMany.message]).to.deep.equal([-32602, `hardhat_mine mines at most ${MAX_BLOCKS_PER_MINE} blocks per call on this chain (each block is journaled and replayed)`])
    const bad = await rpcError(provider.request({ method: 'hardhat_mine', params: ['ten'] }))
    expect(bad.message).to.equal('hardhat_mine: the number of blocks must be a quantity such as "0x2", not "ten"')
    expect((await rpcError(provider.request({ method: 'hardhat_mine', params: [2, -1] }))).message).to.equal('hardhat_mine: the interval must be a quantity such as "0x2", not -1')
    expect(inner.head).to.equal(0)
    expect(await provider.request({ method: 'hardhat_mine', params: [2] })).to.equal(true)
    expect(records().map((r) => ('n' in r ? r.n : r))).to.deep.equal([1, 2])
  })

  it('journals a send the chain mined though it answered an error, and passes the error on', async () => {
    inner.send = 'revert'
    try {
      await provider.request({ method: 'eth_sendRawTransaction', params: ['0xAB01'] })
      expect.fail('the revert was not passed on')
    } catch (err) {
      expect((err as Error).message).to.equal('execution reverted')
    }
    expect(records()).to.deep.equal([{ n: 1, t: 101, h: '0xb1', txs: ['0xab01'] }])
  })

  it('stops serving once an accepted transaction cannot be journaled, and says why from then on', async () => {
    // The chain answers the hash of a transaction it signed and left in its pool, then cannot tell its bytes.
    const e = await rpcError(provider.request({ method: 'eth_sendTransaction', params: [{ from: '0x1' }] }))
    expect(e.message).to.match(/^chain is stopping: a mined block or accepted transaction could not be journaled: transaction 0x(cd){32} was accepted but the chain does not know it$/)
    expect(fatal.map((f) => f.message)).to.deep.equal([e.message.replace('chain is stopping: ', '')])
    const after = await rpcError(provider.request({ method: 'eth_chainId' }))
    expect(after.message).to.equal(e.message)
    expect(records()).to.deep.equal([])
  })
})
