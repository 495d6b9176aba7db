import { expect } from 'chai'
import { appendFileSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes, randomUUID } from 'node:crypto'
import { Wallet, hexlify } from 'ethers'
import { HARDHAT_ACCOUNT_0_KEY, deployBatchPin, fundAccounts } from '../../network/chain/deploy.js'
import { spawnLogged } from '../../network/process.js'
import { encodePinBatch, type RpcLog } from '../../node/chain/abi.js'
import { JsonRpcClient, RpcError } from '../../node/chain/rpc.js'
import { pendingNonce, signTransaction } from '../../node/chain/tx.js'
import type { BatchId, Hash, TxId } from '../../node/core/ids.js'
import { programArgs } from '../support/programs.js'
import { assertCompiled, startChain, stopAllChains, type TestChain } from '../support/chain-process.js'

interface Snapshot {
  head: number
  hashes: string[]
  timestamps: number[]
  logs: RpcLog[]
  code: string
}

async function snapshot(rpc: JsonRpcClient, contract: string): Promise<Snapshot> {
  const head = Number(await rpc.call<string>('eth_blockNumber'))
  const hashes: string[] = []
  const timestamps: number[] = []
  for (let n = 0; n <= head; n++) {
    const b = await rpc.call<{ hash: string; timestamp: string }>('eth_getBlockByNumber', ['0x' + n.toString(16), false])
    hashes.push(b.hash)
    timestamps.push(Number(b.timestamp))
  }
  const logs = await rpc.call<RpcLog[]>('eth_getLogs', [{ fromBlock: '0x0', toBlock: 'latest' }])
  const code = await rpc.call<string>('eth_getCode', [contract, 'latest'])
  return { head, hashes, timestamps, logs, code }
}

const pin = (): string =>
  encodePinBatch({
    txId: randomUUID() as TxId,
    batchId: randomUUID() as BatchId,
    batchHash: hexlify(randomBytes(32)).slice(2) as Hash,
    payloadRef: '',
    contexts: [hexlify(randomBytes(32)).slice(2) as Hash],
  })

describe('chain process: journal and resume', function () {
  this.timeout(120_000)
  let chain: TestChain
  let rpc: JsonRpcClient
  let contract: string
  const member = Wallet.createRandom()
  let nonce = 0

  async function sendPin(): Promise<void> {
    const tx = await signTransaction(rpc, new Wallet(member.privateKey), { chainId: 31337n, nonce: nonce++, to: contract, data: pin() })
    await rpc.call('eth_sendRawTransaction', [tx.raw])
  }

  before(async () => {
    assertCompiled()
    chain = await startChain()
    rpc = new JsonRpcClient(chain.rpc)
    contract = (await deployBatchPin(chain.rpc)).address
    await fundAccounts(chain.rpc, [member.address], '10')
  })

  after(() => stopAllChains())

  it('refuses calls that would make the history unreplayable', async () => {
    for (const [method, params] of [
      ['evm_snapshot', []],
      ['evm_revert', ['0x1']],
      ['hardhat_reset', []],
      ['hardhat_setBalance', [member.address, '0x1']],
      ['evm_setIntervalMining', [1000]],
      ['hardhat_dropTransaction', ['0x' + '00'.repeat(32)]],
    ] as const) {
      const err = await rpc.call(method, [...params]).then(() => undefined, (e: unknown) => e)
      expect(err, method).to.be.instanceOf(RpcError)
      expect((err as RpcError).transport).to.equal(false)
      expect((err as RpcError).message).to.contain(`${method} is refused`)
    }
  })

  it('survives SIGKILL: same blocks, hashes, logs and contract, and carries on', async () => {
    for (let i = 0; i < 5; i++) await sendPin()
    // A transaction that reverts is still mined (Hardhat answers with an error): it must be replayed too.
    const bad = await signTransaction(rpc, new Wallet(member.privateKey), {
      chainId: 31337n, nonce: nonce++, to: contract, data: '0xdeadbeef', gasLimit: 100_000n,
    })
    const reverted = await rpc.call('eth_sendRawTransaction', [bad.raw]).then(() => undefined, (e: unknown) => e)
    expect((reverted as Error).message).to.match(/revert/i)
    // Blocks mined by the node itself (an unlocked account, an empty block) are journaled as well.
    const unlocked = new Wallet(HARDHAT_ACCOUNT_0_KEY).address
    await rpc.call('eth_sendTransaction', [{ from: unlocked, to: member.address, value: '0x1' }])
    await rpc.call('evm_mine')
    await sendPin()

    const before = await snapshot(rpc, contract)
    expect(before.head).to.be.greaterThan(8)
    expect(before.logs.length).to.equal(6)
    await chain.kill()

    chain = await startChain({ dir: chain.dir, port: chain.port })
    expect(chain.output()).to.contain(`blocks=${before.head}`)
    const after = await snapshot(rpc, contract)
    expect(after).to.deep.equal(before)

    await sendPin()
    const next = await snapshot(rpc, contract)
    expect(next.head).to.equal(before.head + 1)
    expect(next.timestamps[next.head]).to.be.greaterThan(before.timestamps[before.head]!)
    expect(next.logs.length).to.equal(7)
    expect(await pendingNonce(rpc, member.address)).to.equal(nonce)
  })

  it('drops a journal line cut short by a crash', async () => {
    const before = await snapshot(rpc, contract)
    await chain.kill()
    appendFileSync(join(chain.dir, 'chain-journal.jsonl'), '{"n":999,"t":1,"h":"0x')
    chain = await startChain({ dir: chain.dir, port: chain.port })
    expect(chain.output()).to.contain('dropped a journal entry cut short by a crash')
    expect(await snapshot(rpc, contract)).to.deep.equal(before)
    await sendPin()
    await chain.stop()
    chain = await startChain({ dir: chain.dir, port: chain.port })
    expect(chain.output()).to.not.contain('dropped')
    expect(Number(await rpc.call<string>('eth_blockNumber'))).to.equal(before.head + 1)
  })

  it('names a busy port in one line and exits 1; exits 0 on SIGTERM', async () => {
    const other = spawnLogged({
      name: 'chain-2',
      command: process.execPath,
      args: await programArgs('chain', ['--dir', join(chain.dir, 'second'), '--port', String(chain.port)]),
      logFile: join(chain.dir, 'second.log'),
    })
    expect(await other.exited).to.equal(1)
    const lines = readFileSync(join(chain.dir, 'second.log'), 'utf8').trim().split('\n')
    expect(lines).to.have.length(1)
    expect(lines[0]).to.contain(String(chain.port))

    const exit = chain.proc.exited
    await chain.stop()
    expect(await exit).to.equal(0)
  })
})
