import { expect } from 'chai'
import { randomBytes, randomUUID } from 'node:crypto'
import { Wallet, getCreateAddress, hexlify } from 'ethers'
import { HARDHAT_ACCOUNT_0_KEY, deployBatchPin, fundAccounts } from '../../network/chain/deploy.js'
import { freePort, sleep, waitFor } from '../../network/process.js'
import { createChain, type BatchPinEvent, type Chain, type PinBatchRequest } from '../../node/chain/index.js'
import { JsonRpcClient } from '../../node/chain/rpc.js'
import { pendingNonce } from '../../node/chain/tx.js'
import type { BatchId, Hash, TxId } from '../../node/core/ids.js'
import { startChain, startDeployedChain, stopAllChains, tempDir, type TestChain } from '../support/chain-process.js'

const hash = (): Hash => hexlify(randomBytes(32)).slice(2) as Hash

function request(contexts: number, broadcast: boolean): PinBatchRequest {
  return {
    txId: randomUUID() as TxId,
    batchId: randomUUID() as BatchId,
    batchHash: hash(),
    payloadRef: broadcast ? 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG' : '',
    contexts: Array.from({ length: contexts }, hash),
  }
}

/** A createChain instance with what a node would store: the events, the cursor, and the log lines. */
interface Member {
  chain: Chain
  events: BatchPinEvent[]
  /** The `throughBlock` of every onEvents call, in order. */
  throughs: number[]
  lines: string[]
  /** The stored cursor: the next block to process. */
  cursor: number
  failNext: number
  /**
   * What onEvents found wrong with the ranges it was given. Recorded rather than thrown: a throw from onEvents is
   * the seam's "storing failed", which it logs and retries, so the test would not see it. afterEach fails on any.
   */
  violations: string[]
}

describe('chain seam: createChain over a real chain', function () {
  this.timeout(120_000)
  let chain: TestChain
  let contract: string
  let firstBlock: number
  const members: Member[] = []
  const alice = Wallet.createRandom()
  const bob = Wallet.createRandom()

  function member(opts: { key: string; fromBlock: number; rpc?: string; contract?: string; pollIntervalMs?: number }): Member {
    const m: Omit<Member, 'chain'> = { events: [], throughs: [], lines: [], cursor: opts.fromBlock, failNext: 0, violations: [] }
    const seam = createChain({
      rpc: opts.rpc ?? chain.rpc,
      contract: opts.contract ?? contract,
      privateKey: opts.key,
      fromBlock: opts.fromBlock,
      pollIntervalMs: opts.pollIntervalMs,
      log: (line) => m.lines.push(line),
      onEvents: async (events, throughBlock) => {
        if (m.failNext > 0) {
          m.failNext--
          throw new Error('database is busy')
        }
        // Contiguous ranges in order: each call starts where the stored cursor is.
        for (const ev of events) {
          if (ev.blockNumber < m.cursor || ev.blockNumber > throughBlock) m.violations.push(`event ${ev.batchId} of block ${ev.blockNumber} given for blocks ${m.cursor}-${throughBlock}`)
        }
        if (throughBlock < m.cursor) m.violations.push(`blocks ${m.cursor}-${throughBlock} given: an empty or backward range`)
        m.events.push(...events)
        m.throughs.push(throughBlock)
        m.cursor = throughBlock + 1
      },
    })
    const member: Member = Object.assign(m, { chain: seam })
    members.push(member)
    seam.start()
    return member
  }

  const count = (m: Member, text: string): number => m.lines.filter((l) => l.includes(text)).length

  before(async () => {
    ;({ chain, contract, firstBlock } = await startDeployedChain([alice.address, bob.address]))
  })

  afterEach(() => {
    expect(members.flatMap((m) => m.violations), 'ranges onEvents was given out of order').to.deep.equal([])
  })

  after(async () => {
    try {
      await Promise.race([Promise.all(members.map((m) => m.chain.stop())), sleep(10_000)])
    } finally {
      await stopAllChains()
    }
  })

  let sender: Member
  let follower: Member
  const pinned: PinBatchRequest[] = []

  it('pins in call order from one member; the other sees every field, woken by new blocks', async () => {
    sender = member({ key: alice.privateKey, fromBlock: firstBlock })
    // A poll far longer than the test: whatever the follower sees quickly came through newHeads.
    follower = member({ key: bob.privateKey, fromBlock: firstBlock, pollIntervalMs: 600_000 })
    await waitFor('the follower to connect', () => follower.chain.status().connected)

    const reqs = Array.from({ length: 12 }, (_, i) => request(i % 4 === 0 ? 0 : i * 3, i % 2 === 0))
    pinned.push(...reqs)
    const results = await Promise.all(reqs.map((r) => sender.chain.submitPinBatch(r)))
    for (let i = 1; i < results.length; i++) expect(results[i]!.blockNumber).to.be.greaterThan(results[i - 1]!.blockNumber)

    await waitFor('the follower to see every pin', () => follower.events.length >= reqs.length, { timeoutMs: 10_000 })
    expect(follower.events).to.have.length(reqs.length)
    for (const [i, ev] of follower.events.entries()) {
      const req = reqs[i]!
      expect(ev).to.deep.include({
        author: alice.address.toLowerCase(),
        action: 'firefly:batch_pin',
        txId: req.txId,
        batchId: req.batchId,
        batchHash: req.batchHash,
        payloadRef: req.payloadRef,
        contexts: req.contexts,
        txHash: results[i]!.txHash,
        blockNumber: results[i]!.blockNumber,
        txIndex: 0,
        logIndex: 0,
      })
      expect(ev.protocolId).to.equal(`${String(ev.blockNumber).padStart(12, '0')}/000000/000000`)
      expect(ev.timestamp).to.be.closeTo(Date.now() / 1000, 120)
    }
    const status = follower.chain.status()
    expect(status).to.deep.include({ connected: true, networkVersion: 2, contract, rpc: chain.rpc })
    expect(status.lastProcessedBlock).to.be.at.least(results.at(-1)!.blockNumber)
    expect(follower.lines.filter((l) => !l.startsWith('chain: following'))).to.deep.equal([])
    await waitFor('the sender to see its own pins', () => sender.events.length === reqs.length)
  })

  it('a follower restarted from its stored cursor neither misses nor repeats, and a failed store is offered again', async () => {
    await follower.chain.stop()
    const more = [request(2, false), request(1, true), request(0, false)]
    pinned.push(...more)
    for (const r of more) await sender.chain.submitPinBatch(r)

    const restarted = member({ key: bob.privateKey, fromBlock: follower.cursor })
    restarted.failNext = 1
    await waitFor('the restarted follower to catch up', () => restarted.events.length >= more.length, { timeoutMs: 15_000 })
    expect(restarted.events.map((e) => e.batchId)).to.deep.equal(more.map((r) => r.batchId))
    expect([...follower.events, ...restarted.events].map((e) => e.batchId)).to.deep.equal(pinned.map((r) => r.batchId))
    expect(count(restarted, 'storing the events of blocks')).to.equal(1)
    expect(count(restarted, 'storing events works again')).to.equal(1)
    follower = restarted
  })

  it('logs one line for a wrong contract address, retries, and recovers once the contract is there', async () => {
    const rpc = new JsonRpcClient(chain.rpc)
    const deployer = new Wallet(HARDHAT_ACCOUNT_0_KEY).address
    const next = getCreateAddress({ from: deployer, nonce: await pendingNonce(rpc, deployer) }).toLowerCase()
    const watcher = member({ key: Wallet.createRandom().privateKey, fromBlock: 0, contract: next })
    await sleep(2000)
    expect(count(watcher, `chain: no contract at ${next} on ${chain.rpc}`)).to.equal(1)
    expect(watcher.lines).to.have.length(1)
    expect(watcher.chain.status()).to.deep.include({ connected: false })
    expect(watcher.chain.status().error).to.contain('no contract at')

    expect((await deployBatchPin(chain.rpc)).address).to.equal(next)
    await waitFor('the watcher to verify the contract', () => watcher.chain.status().connected, { timeoutMs: 10_000 })
    expect(count(watcher, 'no contract at')).to.equal(1)
    expect(count(watcher, 'chain: following')).to.equal(1)
  })

  it('logs one line for an unreachable chain, keeps a pin waiting, and delivers it when the chain comes up', async () => {
    const port = await freePort()
    const rpcUrl = `http://127.0.0.1:${port}`
    const key = Wallet.createRandom()
    // The first contract Hardhat's account #0 deploys on a fresh chain always lands here.
    const firstAddress = getCreateAddress({ from: new Wallet(HARDHAT_ACCOUNT_0_KEY).address, nonce: 0 }).toLowerCase()
    const late = member({ key: key.privateKey, fromBlock: 0, rpc: rpcUrl, contract: firstAddress })
    const req = request(3, true)
    const submitted = late.chain.submitPinBatch(req)
    let settled = false
    void submitted.finally(() => (settled = true)).catch(() => undefined)
    await sleep(2000)
    expect(settled).to.equal(false)
    expect(late.lines).to.deep.equal([`chain: cannot reach ${rpcUrl}: ECONNREFUSED`])
    expect(late.chain.status()).to.deep.include({ connected: false, lastProcessedBlock: -1 })

    const second = await startChain({ dir: tempDir(), port })
    expect((await deployBatchPin(second.rpc)).address).to.equal(firstAddress)
    await waitFor('the member to connect', () => late.chain.status().connected, { timeoutMs: 10_000 })
    // Connected, but its key has no ether yet: the pin waits, with one line saying why.
    await waitFor('the funds problem to be logged', () => count(late, 'not sent yet') === 1)
    expect(late.lines.find((l) => l.includes('not sent yet'))).to.match(/enough funds|insufficient funds/)
    await sleep(500)
    expect(settled).to.equal(false)
    await fundAccounts(second.rpc, [key.address], '1')
    const result = await submitted
    await waitFor('the pin to be seen', () => late.events.some((e) => e.batchId === req.batchId), { timeoutMs: 10_000 })
    expect(late.events.find((e) => e.batchId === req.batchId)!.blockNumber).to.equal(result.blockNumber)
    expect(count(late, 'cannot reach')).to.equal(1)
    expect(count(late, 'not sent yet')).to.equal(1)
    await second.stop()
  })

  it('rides out a chain crash: followers reconnect, pins go on in order', async () => {
    const before = follower.events.length
    await chain.kill()
    await waitFor('the follower to notice', () => count(follower, 'cannot reach') === 1, { timeoutMs: 15_000 })
    const during = sender.chain.submitPinBatch(request(1, false))
    await sleep(500)
    chain = await startChain({ dir: chain.dir, port: chain.port })
    const after = [request(1, true), request(2, false)]
    const results = await Promise.all([during, ...after.map((r) => sender.chain.submitPinBatch(r))])
    for (let i = 1; i < results.length; i++) expect(results[i]!.blockNumber).to.be.greaterThan(results[i - 1]!.blockNumber)
    await waitFor('the follower to see the new pins', () => follower.events.length === before + 3, { timeoutMs: 15_000 })
    expect(follower.events.slice(before).map((e) => e.txHash)).to.deep.equal(results.map((r) => r.txHash))
    expect(count(follower, 'cannot reach')).to.equal(1)
    expect(count(follower, 'chain: following')).to.equal(2)
  })
})
