import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes, randomUUID } from 'node:crypto'
import { Wallet, hexlify, keccak256 } from 'ethers'
import { HARDHAT_ACCOUNT_0_KEY, deployBatchPin, fundAccounts } from '../../network/chain/deploy.js'
import { MAX_BLOCKS_PER_MINE } from '../../network/chain/journaled-provider.js'
import { sleep, waitFor } from '../../network/process.js'
import { encodePinBatch } from '../../node/chain/abi.js'
import { createChain, type BatchPinEvent, type Chain, type PinBatchRequest } from '../../node/chain/index.js'
import { JsonRpcClient, RpcError } from '../../node/chain/rpc.js'
import { getReceipt, pendingNonce, signTransaction, type RpcReceipt, type SignedTx } from '../../node/chain/tx.js'
import type { BatchId, Hash, TxId } from '../../node/core/ids.js'
import { assertCompiled, startChain, stopAllChains, type TestChain } from '../support/chain-process.js'

interface Block {
  number: string
  hash: string
  timestamp: string
  transactions: string[]
}

const hash = (): Hash => hexlify(randomBytes(32)).slice(2) as Hash
const pinRequest = (): PinBatchRequest => ({
  txId: randomUUID() as TxId,
  batchId: randomUUID() as BatchId,
  batchHash: hash(),
  payloadRef: '',
  contexts: [hash()],
})

/** The journal's lines, parsed: block records `{n, t, h, txs}` and pending records `{pending}`. */
function journalLines(dir: string): Array<{ n?: number; t?: number; h?: string; txs?: string[]; pending?: string }> {
  return readFileSync(join(dir, 'chain-journal.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as { n?: number; pending?: string })
}

describe('chain process: mining controls', function () {
  this.timeout(120_000)
  let chain: TestChain
  let rpc: JsonRpcClient
  let contract: string
  const alice = Wallet.createRandom()
  const bob = Wallet.createRandom()
  const nonces = new Map<string, number>()
  const members: Chain[] = []

  /** A signed pin from `who`, with the next nonce counted here (or the one given). */
  async function pin(who: Wallet | typeof alice, opts: { nonce?: number; tip?: bigint } = {}): Promise<SignedTx> {
    const nonce = opts.nonce ?? nonces.get(who.address) ?? 0
    if (opts.nonce === undefined) nonces.set(who.address, nonce + 1)
    const tip = opts.tip ?? 1_000_000_000n
    const fees = { type: 2, maxFeePerGas: 10_000_000_000n + tip, maxPriorityFeePerGas: tip }
    return signTransaction(rpc, new Wallet(who.privateKey), { chainId: 31337n, nonce, to: contract, data: encodePinBatch(pinRequest()), gasLimit: 200_000n }, fees)
  }
  const send = (tx: SignedTx): Promise<string> => rpc.call<string>('eth_sendRawTransaction', [tx.raw])
  const head = async (): Promise<number> => Number(await rpc.call<string>('eth_blockNumber'))
  const block = (n: number | 'latest'): Promise<Block> => rpc.call<Block>('eth_getBlockByNumber', [typeof n === 'number' ? '0x' + n.toString(16) : n, false])
  const receipt = (tx: SignedTx): Promise<RpcReceipt | null> => getReceipt(rpc, tx.hash)
  const automine = (): Promise<boolean> => rpc.call<boolean>('hardhat_getAutomine')
  const setAutomine = (on: boolean): Promise<unknown> => rpc.call('evm_setAutomine', [on])
  async function blocks(from: number, to: number): Promise<Block[]> {
    const out: Block[] = []
    for (let n = from; n <= to; n++) out.push(await block(n))
    return out
  }

  before(async () => {
    assertCompiled()
    chain = await startChain()
    rpc = new JsonRpcClient(chain.rpc)
    contract = (await deployBatchPin(chain.rpc)).address
    await fundAccounts(chain.rpc, [alice.address, bob.address], '10')
  })

  after(async () => {
    try {
      await Promise.race([Promise.all(members.map((m) => m.stop())), sleep(10_000)])
    } finally {
      await stopAllChains()
    }
  })

  it('mining off: two senders\' transactions are answered with their hashes, journaled as pending, and not mined', async () => {
    expect(await automine()).to.equal(true)
    await setAutomine(false)
    expect(await automine()).to.equal(false)
    const start = await head()
    const lines = journalLines(chain.dir).length
    const a = await pin(alice)
    const b = await pin(bob)
    expect(await send(a)).to.equal(a.hash)
    expect(await send(b)).to.equal(b.hash)
    await sleep(300)
    expect(await head()).to.equal(start)
    expect(await receipt(a)).to.equal(null)
    expect(await receipt(b)).to.equal(null)
    // Known to the chain (so a submitter does not send it again), in no block yet.
    const known = await rpc.call<{ blockNumber: string | null }>('eth_getTransactionByHash', [a.hash])
    expect(known.blockNumber).to.equal(null)
    expect(journalLines(chain.dir).slice(lines)).to.deep.equal([{ pending: a.raw.toLowerCase() }, { pending: b.raw.toLowerCase() }])

    // evm_mine: one block with both, in the order they were sent; journaled as one block line.
    await rpc.call('evm_mine')
    expect(await head()).to.equal(start + 1)
    const mined = await block('latest')
    expect(mined.transactions).to.deep.equal([a.hash, b.hash])
    expect(Number((await receipt(a))!.blockNumber)).to.equal(start + 1)
    expect(Number((await receipt(b))!.blockNumber)).to.equal(start + 1)
    const last = journalLines(chain.dir).at(-1)!
    expect(last).to.deep.include({ n: start + 1, h: mined.hash, txs: [a.raw.toLowerCase(), b.raw.toLowerCase()] })
    expect(await automine()).to.equal(false)
  })

  it('a transaction the chain signs itself (eth_sendTransaction) is journaled as pending with its exact bytes', async () => {
    const from = new Wallet(HARDHAT_ACCOUNT_0_KEY).address
    const sent = await rpc.call<string>('eth_sendTransaction', [{ from, to: alice.address, value: '0x1' }])
    const pendingRaw = journalLines(chain.dir).at(-1)!.pending!
    expect(keccak256(pendingRaw)).to.equal(sent)
    await rpc.call('evm_mine')
    expect((await block('latest')).transactions).to.deep.equal([sent])
    expect(journalLines(chain.dir).at(-1)!.txs).to.deep.equal([pendingRaw])
  })

  it('evm_mine with a timestamp, an empty block, and a higher tip first', async () => {
    const start = await head()
    const at = Number((await block('latest')).timestamp) + 1000
    await rpc.call('evm_mine', [at])
    expect(Number((await block('latest')).timestamp)).to.equal(at)
    expect((await block('latest')).transactions).to.deep.equal([])
    // Hardhat orders the mempool by tip, then by arrival: the journal keeps the block's own order.
    const low = await pin(alice)
    const high = await pin(bob, { tip: 3_000_000_000n })
    await send(low)
    await send(high)
    await rpc.call('evm_mine')
    expect((await block('latest')).transactions).to.deep.equal([high.hash, low.hash])
    expect(await head()).to.equal(start + 2)
  })

  it('hardhat_mine n: n journaled blocks, the first with the pending transactions, timestamps always increasing', async () => {
    const start = await head()
    const a = await pin(alice)
    await send(a)
    expect(await rpc.call('hardhat_mine', ['0x3'])).to.equal(true)
    expect(await head()).to.equal(start + 3)
    const mined = await blocks(start, start + 3)
    expect(mined.map((b) => b.transactions.length)).to.deep.equal([mined[0]!.transactions.length, 1, 0, 0])
    expect(mined[1]!.transactions).to.deep.equal([a.hash])
    for (let i = 1; i < mined.length; i++) expect(Number(mined[i]!.timestamp)).to.be.greaterThan(Number(mined[i - 1]!.timestamp))
    // An interval in seconds between the blocks after the first.
    await rpc.call('hardhat_mine', ['0x2', '0x3c'])
    const spaced = await blocks(start + 4, start + 5)
    expect(Number(spaced[1]!.timestamp) - Number(spaced[0]!.timestamp)).to.equal(60)
    // No count: one block. Zero: none.
    await rpc.call('hardhat_mine')
    await rpc.call('hardhat_mine', ['0x0'])
    expect(await head()).to.equal(start + 6)
    const lines = journalLines(chain.dir).filter((l) => l.n !== undefined && l.n > start)
    expect(lines.map((l) => l.n)).to.deep.equal([1, 2, 3, 4, 5, 6].map((i) => start + i))

    const tooMany = await rpc.call('hardhat_mine', ['0x' + (MAX_BLOCKS_PER_MINE + 1).toString(16)]).then(() => undefined, (e: unknown) => e)
    expect(tooMany).to.be.instanceOf(RpcError)
    expect((tooMany as RpcError).code).to.equal(-32602)
    expect((tooMany as RpcError).message).to.contain(`at most ${MAX_BLOCKS_PER_MINE} blocks`)
    const bad = await rpc.call('hardhat_mine', ['three']).then(() => undefined, (e: unknown) => e)
    expect((bad as RpcError).code).to.equal(-32602)
    expect(await head()).to.equal(start + 6)
  })

  it('hardhat_mine with interval 0 still stamps every block after its parent, and so do the blocks after it', async () => {
    // Hardhat's own hardhat_mine with interval 0 reports its later blocks one second apart, but stamps the blocks
    // mined after them from the first one: earlier than their parent, which evm_mine refuses to mine again.
    await setAutomine(true)
    const start = await head()
    await rpc.call('hardhat_mine', ['0x3', '0x0'])
    await rpc.call('hardhat_mine', ['0x2', '0x0'])
    await send(await pin(alice))
    await rpc.call('evm_mine')
    const mined = await blocks(start, await head())
    expect(mined).to.have.length(8)
    for (let i = 1; i < mined.length; i++) expect(Number(mined[i]!.timestamp), `block ${start + i}`).to.be.greaterThan(Number(mined[i - 1]!.timestamp))
    expect(await automine()).to.equal(true)
  })

  it('SIGKILL with transactions pending: the journal replays identically, pending ones are mined at the restart, automine is back on', async () => {
    await setAutomine(false)
    // A multi-transaction block, then: a pending pin from each sender, bob's next one after a nonce gap, and a
    // pending transaction replaced by one of the same nonce and a higher fee (also pending).
    const x = await pin(alice)
    const y = await pin(bob)
    await send(x)
    await send(y)
    await rpc.call('evm_mine')
    const a = await pin(alice)
    const b = await pin(bob)
    const skipped = nonces.get(bob.address)!
    const gap = await pin(bob, { nonce: skipped + 1 })
    const replaced = await pin(alice)
    const replacement = await pin(alice, { nonce: replaced.nonce, tip: 5_000_000_000n })
    for (const tx of [a, b, gap, replaced, replacement]) expect(await send(tx)).to.equal(tx.hash)
    const before = await head()
    const history = await blocks(0, before)
    expect(history.at(-1)!.transactions).to.deep.equal([x.hash, y.hash])
    expect(journalLines(chain.dir).filter((l) => l.pending !== undefined).length).to.be.at.least(5)

    await chain.kill()
    chain = await startChain({ dir: chain.dir, port: chain.port })
    const output = chain.output()
    expect(output).to.not.contain('differ')
    expect(output).to.contain('chain: 5 transaction(s) were pending when the chain stopped: 3 mined now in 1 block(s), 1 still pending (an earlier nonce missing, or too low a fee), 1 replaced by a transaction of the same nonce')
    expect(output).to.contain(`blocks=${before + 1}`)
    // The journaled history, the multi-transaction block included, is the same chain, hashes and all.
    expect(await blocks(0, before)).to.deep.equal(history)
    // The pending ones are mined in one new block, in their original order (by tip, then arrival).
    const restart = await block(before + 1)
    // (alice's replacement follows her own earlier nonce, and has a higher tip than bob's)
    expect(restart.transactions).to.deep.equal([a.hash, replacement.hash, b.hash])
    expect(await rpc.call('eth_getTransactionByHash', [replaced.hash])).to.equal(null)
    expect((await rpc.call<{ blockNumber: string | null }>('eth_getTransactionByHash', [gap.hash])).blockNumber).to.equal(null)

    // Mining is on again: a transaction is mined as it is sent; filling bob's gap mines the waiting one too.
    expect(await automine()).to.equal(true)
    const filler = await pin(bob, { nonce: skipped })
    nonces.set(bob.address, skipped + 2)
    await send(filler)
    expect(await receipt(filler)).to.not.equal(null)
    await waitFor('the transaction after the gap to be mined', async () => (await receipt(gap)) !== null, { timeoutMs: 5000 })
    const now = await head()
    const all = await blocks(0, now)

    // A second restart (SIGTERM) replays everything, the restart's own block included, and has nothing to send.
    await chain.stop()
    chain = await startChain({ dir: chain.dir, port: chain.port })
    expect(chain.output()).to.not.contain('pending when the chain stopped')
    expect(chain.output()).to.not.contain('differ')
    expect(await blocks(0, now)).to.deep.equal(all)
    expect(await pendingNonce(rpc, alice.address)).to.equal(nonces.get(alice.address))
    expect(await pendingNonce(rpc, bob.address)).to.equal(nonces.get(bob.address))
  })

  it('a node\'s pins wait unmined without resending or failing, land in one block on demand, and survive a chain crash', async () => {
    const lines: string[] = []
    const fromBlock = (await head()) + 1
    const member = (key: string): { chain: Chain; events: BatchPinEvent[] } => {
      const events: BatchPinEvent[] = []
      const c = createChain({
        rpc: chain.rpc,
        contract,
        privateKey: key,
        fromBlock,
        log: (line) => lines.push(line),
        onEvents: async (evs) => {
          events.push(...evs)
        },
      })
      members.push(c)
      c.start()
      return { chain: c, events }
    }
    const { chain: m1, events } = member(alice.privateKey)
    const { chain: m2 } = member(bob.privateKey)
    await waitFor('both members to connect', () => m1.status().connected && m2.status().connected)

    await setAutomine(false)
    const start = await head()
    const r1 = pinRequest()
    const r2 = pinRequest()
    const r3 = pinRequest()
    const p1 = m1.submitPinBatch(r1)
    const p2 = m2.submitPinBatch(r2)
    const p3 = m1.submitPinBatch(r3)
    const [h1, h2, h3] = await Promise.all([p1.sent, p2.sent, p3.sent])
    let settled = 0
    for (const p of [p1, p2, p3]) void p.then(() => settled++, () => settled++)
    // Longer than the submitter's receipt poll (2 s): it keeps asking, finds each transaction known, sends nothing.
    await sleep(5000)
    expect(settled).to.equal(0)
    expect(await head()).to.equal(start)
    const pending = await rpc.call<Block>('eth_getBlockByNumber', ['pending', false])
    expect(pending.transactions).to.have.members([h1, h2, h3])
    expect(pending.transactions).to.have.length(3)
    expect(await pendingNonce(rpc, alice.address)).to.equal(nonces.get(alice.address)! + 2)
    expect(lines.filter((l) => !l.startsWith('chain: following'))).to.deep.equal([])

    await rpc.call('evm_mine')
    const mined = await Promise.all([p1, p2, p3])
    expect(mined.map((m) => m.blockNumber)).to.deep.equal([start + 1, start + 1, start + 1])
    expect(mined.map((m) => m.txHash)).to.deep.equal([h1, h2, h3])
    await waitFor('the pins to be read', () => events.length >= 3)
    // One block, in the block's order: the chain's pin order, which every member reads alike.
    const inBlock = (await block(start + 1)).transactions
    expect(inBlock).to.have.members([h1, h2, h3])
    expect(inBlock.indexOf(h1)).to.be.lessThan(inBlock.indexOf(h3))
    expect(events.map((e) => [e.blockNumber, e.logIndex, e.txHash])).to.deep.equal(inBlock.map((h, i) => [start + 1, i, h]))

    // Mining off, a pin sent, the chain killed before mining it: the restarted chain mines it, and the submission ends.
    nonces.set(alice.address, nonces.get(alice.address)! + 2)
    const p4 = m1.submitPinBatch(pinRequest())
    const h4 = await p4.sent
    await chain.kill()
    chain = await startChain({ dir: chain.dir, port: chain.port })
    expect(chain.output()).to.contain('1 mined now in 1 block(s)')
    const m4 = await p4
    expect(m4.txHash).to.equal(h4)
    expect(m4.blockNumber).to.equal(start + 2)
    expect(await automine()).to.equal(true)
    nonces.set(alice.address, nonces.get(alice.address)! + 1)
    expect(await pendingNonce(rpc, alice.address)).to.equal(nonces.get(alice.address))
  })
})
