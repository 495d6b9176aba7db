import { expect } from 'chai'
import { randomBytes, randomUUID } from 'node:crypto'
import { batchPinInterface, type RpcLog } from '../../../../node/chain/abi.js'
import { ConsumerError, LogFollower } from '../../../../node/chain/follower.js'
import { RpcError } from '../../../../node/chain/rpc.js'
import { uuidsBytes32 } from '../../../../node/core/hashes.js'
import type { BatchId, TxId } from '../../../../node/core/ids.js'
import type { BatchPinEvent } from '../../../../node/model/index.js'
import { ScriptedRpc } from '../../../support/scripted-rpc.js'
import { rejectionOf } from '../../../support/wait.js'

const contract = '0x' + '11'.repeat(20)
const hex32 = (): string => '0x' + randomBytes(32).toString('hex')

/** A BatchPin log of block `block`, at `logIndex`, as ethers' ABI coder writes it. */
function pinLog(block: number, logIndex: number, extra: Partial<RpcLog> = {}): RpcLog {
  const uuids = uuidsBytes32(randomUUID() as TxId, randomUUID() as BatchId)
  const { data, topics } = batchPinInterface.encodeEventLog('BatchPin', ['0x' + '22'.repeat(20), 1n, 'firefly:batch_pin', uuids, hex32(), 'Qm', [hex32()]])
  return { address: contract, topics, data, blockNumber: '0x' + block.toString(16), transactionHash: hex32(), transactionIndex: '0x0', logIndex: '0x' + logIndex.toString(16), ...extra }
}

/** The block range of an eth_getLogs call. */
const range = (params: unknown[]): [number, number] => {
  const f = params[0] as { fromBlock: string; toBlock: string }
  return [Number(f.fromBlock), Number(f.toBlock)]
}

describe('log follower: ranges, refusals and malformed logs', () => {
  it('asks for half the range when the endpoint refuses one as too large, then tries twice as much again', async () => {
    const asked: [number, number][] = []
    const rpc = new ScriptedRpc((m, params) => {
      if (m === 'eth_blockNumber') return '0x27' // 39
      const [from, to] = range(params)
      asked.push([from, to])
      if (to - from + 1 > 5) throw new RpcError('query returned more than 10000 results', false, -32005)
      return []
    })
    const throughs: number[] = []
    const f = new LogFollower(rpc, contract, 0, 20, async (_e, through) => void throughs.push(through), () => {})
    await f.catchUp(() => false)
    // Halved until it fits; after each range that worked it tries twice the size again.
    expect(asked).to.deep.equal([
      [0, 19], [0, 9], [0, 4],
      [5, 14], [5, 9], [10, 19], [10, 14], [15, 24], [15, 19], [20, 29], [20, 24], [25, 34], [25, 29], [30, 39], [30, 34], [35, 39],
    ])
    expect(throughs).to.deep.equal([4, 9, 14, 19, 24, 29, 34, 39])
    expect(f.cursor).to.equal(40)
  })

  it('passes on a refusal of a single block, and an unreachable endpoint, with the cursor where it was', async () => {
    const refusing = new ScriptedRpc((m) => {
      if (m === 'eth_blockNumber') return '0x5'
      throw new RpcError('internal error', false, -32603)
    })
    const f = new LogFollower(refusing, contract, 5, 10, async () => {}, () => {})
    expect(await rejectionOf(f.catchUp(() => false))).to.be.instanceOf(RpcError).and.include({ message: 'internal error' })
    expect(f.cursor).to.equal(5)

    const down = new ScriptedRpc((m) => {
      if (m === 'eth_blockNumber') return '0x9'
      throw new RpcError('cannot reach http://127.0.0.1:8545: ECONNREFUSED', true)
    })
    const g = new LogFollower(down, contract, 0, 100, async () => {}, () => {})
    expect(await rejectionOf(g.catchUp(() => false))).to.include({ transport: true })
    expect(g.cursor).to.equal(0)
    expect(down.calls).to.deep.equal(['eth_blockNumber', 'eth_getLogs'])
  })

  it('keeps the cursor when the node fails to store a range, naming the blocks and the reason apart', async () => {
    const rpc = new ScriptedRpc((m) => (m === 'eth_blockNumber' ? '0x3' : [pinLog(2, 0)]))
    const f = new LogFollower(rpc, contract, 0, 10, async () => {
      throw new Error('SQLITE_FULL: database or disk is full')
    }, () => {})
    const err = await rejectionOf(f.catchUp(() => false))
    expect(err).to.be.instanceOf(ConsumerError).and.include({
      fromBlock: 0,
      toBlock: 3,
      reason: 'SQLITE_FULL: database or disk is full',
      message: 'storing the events of blocks 0-3 failed: SQLITE_FULL: database or disk is full',
    })
    expect(f.cursor).to.equal(0)
  })

  it('hands over the logs in chain order, leaving out removed ones and skipping an undecodable one with a line', async () => {
    const bad = pinLog(3, 0, { data: '0x1234', transactionHash: '0x' + 'ee'.repeat(32) })
    const logs = [pinLog(4, 1), pinLog(3, 2), pinLog(4, 0), pinLog(3, 1, { removed: true }), bad]
    const rpc = new ScriptedRpc((m) => (m === 'eth_blockNumber' ? '0x4' : logs))
    const lines: string[] = []
    const got: BatchPinEvent[] = []
    const f = new LogFollower(rpc, contract, 0, 10, async (events) => void got.push(...events), (l) => lines.push(l))
    await f.catchUp(() => false)
    expect(got.map((e) => [e.blockNumber, e.logIndex])).to.deep.equal([[3, 2], [4, 0], [4, 1]])
    expect(lines).to.deep.equal([`chain: skipping an undecodable BatchPin log in tx 0x${'ee'.repeat(32)}: not a BatchPin event: malformed data`])
    expect(f.cursor).to.equal(5)
  })

  it('reads nothing once stopped, though it learns the head', async () => {
    const rpc = new ScriptedRpc(() => '0x9')
    const f = new LogFollower(rpc, contract, 0, 10, async () => {}, () => {})
    await f.catchUp(() => true)
    expect(rpc.calls).to.deep.equal(['eth_blockNumber'])
    expect(f.head).to.equal(9)
    expect(f.cursor).to.equal(0)
  })
})
