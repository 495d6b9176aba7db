import { expect } from 'chai'
import { randomBytes, randomUUID } from 'node:crypto'
import { Transaction, Wallet } from 'ethers'
import { LogFollower } from '../../../../node/chain/follower.js'
import { ProblemLog } from '../../../../node/chain/problems.js'
import { RpcError } from '../../../../node/chain/rpc.js'
import { PinSubmitter } from '../../../../node/chain/submitter.js'
import type { Head } from '../../../../node/chain/heads.js'
import type { BatchId, Hash, TxId } from '../../../../node/core/ids.js'
import { countCalls, ScriptedRpc } from '../../../support/scripted-rpc.js'

const count = countCalls

describe('chain calls per block', () => {
  describe('log follower', () => {
    const rpc = (head: number) => new ScriptedRpc((m) => (m === 'eth_blockNumber' ? '0x' + head.toString(16) : []))

    it('reads up to an announced head without asking for the head', async () => {
      const r = rpc(99)
      const throughs: number[] = []
      const f = new LogFollower(r, '0x' + '11'.repeat(20), 5, 2000, async (_e, through) => void throughs.push(through), () => {})
      await f.catchUp(() => false, 7)
      expect(r.calls).to.deep.equal(['eth_getLogs'])
      expect(throughs).to.deep.equal([7])
      expect(f.cursor).to.equal(8)
      expect(f.head).to.equal(7)
    })

    it('asks for the head without an announcement, or when the announced head has nothing after the cursor', async () => {
      const r = rpc(9)
      const f = new LogFollower(r, '0x' + '11'.repeat(20), 5, 2000, async () => {}, () => {})
      await f.catchUp(() => false)
      expect(r.calls).to.deep.equal(['eth_blockNumber', 'eth_getLogs'])
      expect(f.cursor).to.equal(10)
      // A late announcement of a block already read must not make the chain look behind the cursor.
      await f.catchUp(() => false, 8)
      expect(r.calls.slice(2)).to.deep.equal(['eth_blockNumber'])
      expect(f.head).to.equal(9)
    })
  })

  describe('pin submitter', () => {
    const wallet = new Wallet('0x' + randomBytes(32).toString('hex'))
    const contract = '0x' + '22'.repeat(20)
    const req = () => ({
      txId: randomUUID() as TxId,
      batchId: randomUUID() as BatchId,
      batchHash: randomBytes(32).toString('hex') as Hash,
      payloadRef: 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG',
      contexts: [randomBytes(32).toString('hex') as Hash],
    })

    function submitter(opts: { head: () => Head | undefined; refuseFirstSend?: string }) {
      const sent: string[] = []
      let refusal = opts.refuseFirstSend
      const r = new ScriptedRpc((m, params) => {
        switch (m) {
          case 'eth_getTransactionCount':
            return '0x0'
          case 'eth_estimateGas':
            return '0x5208'
          case 'eth_maxPriorityFeePerGas':
            return '0x3b9aca00'
          case 'eth_getBlockByNumber':
            return { baseFeePerGas: '0x7' }
          case 'eth_sendRawTransaction': {
            if (refusal !== undefined) {
              const message = refusal
              refusal = undefined
              throw new RpcError(message, false, -32000)
            }
            sent.push(params[0] as string)
            return Transaction.from(params[0] as string).hash
          }
          case 'eth_getTransactionByHash':
            return null
          case 'eth_getTransactionReceipt':
            return { transactionHash: '0x', blockNumber: '0x10', status: '0x1' }
          default:
            throw new Error(`unexpected ${m}`)
        }
      })
      const s = new PinSubmitter({
        rpc: r,
        wallet,
        contract,
        problems: new ProblemLog(() => {}),
        ready: async () => 31337n,
        nextHead: async () => {},
        stopped: () => false,
        head: opts.head,
      })
      return { r, s, sent }
    }

    it('prices from the announced base fee and reuses the tip: a pin costs a send and a receipt', async () => {
      let head: Head = { number: 10, baseFee: 1000n }
      const { r, s, sent } = submitter({ head: () => head })
      await s.submit(req())
      r.calls.length = 0
      head = { number: 11, baseFee: 875n }
      await s.submit(req())
      head = { number: 12, baseFee: 766n }
      await s.submit(req())
      expect(r.calls).to.deep.equal(['eth_sendRawTransaction', 'eth_getTransactionReceipt', 'eth_sendRawTransaction', 'eth_getTransactionReceipt'])
      const last = Transaction.from(sent[2]!)
      expect(last.nonce).to.equal(2)
      expect(last.maxPriorityFeePerGas).to.equal(1_000_000_000n)
      expect(last.maxFeePerGas).to.equal(2n * 766n + 1_000_000_000n)
    })

    it('without an announced base fee, reads the latest block as before', async () => {
      const { r, s, sent } = submitter({ head: () => ({ number: 3, baseFee: undefined }) })
      await s.submit(req())
      expect(count(r.calls, 'eth_getBlockByNumber')).to.equal(1)
      expect(Transaction.from(sent[0]!).maxFeePerGas).to.equal(2n * 7n + 1_000_000_000n)
    })

    it('asks for the tip again after a send refused for its fee', async () => {
      const { r, s, sent } = submitter({ head: () => ({ number: 5, baseFee: 100n }), refuseFirstSend: 'transaction underpriced' })
      await s.submit(req())
      expect(count(r.calls, 'eth_maxPriorityFeePerGas')).to.equal(2)
      expect(sent).to.have.length(1)
    })
  })
})
