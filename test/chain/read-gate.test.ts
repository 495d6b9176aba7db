import { expect } from 'chai'
import { randomBytes, randomUUID } from 'node:crypto'
import { Wallet, hexlify } from 'ethers'
import { sleep, waitFor } from '../../network/process.js'
import { createChain, type BatchPinEvent, type Chain, type PinBatchRequest } from '../../node/chain/index.js'
import { Gate } from '../../node/core/gate.js'
import type { BatchId, Hash, TxId } from '../../node/core/ids.js'
import { startDeployedChain, stopAllChains, type TestChain } from '../support/chain-process.js'

const hash = (): Hash => hexlify(randomBytes(32)).slice(2) as Hash
const request = (): PinBatchRequest => ({ txId: randomUUID() as TxId, batchId: randomUUID() as BatchId, batchHash: hash(), payloadRef: '', contexts: [hash()] })

/**
 * The chain seam's read gate (the admin routes' chain hold) over a real chain: while held the follower reads no
 * BatchPin log and its cursor stays; released, it catches up from that cursor at once (not at its next poll), missing
 * and repeating nothing. Pins are still submitted meanwhile.
 */
describe('chain seam: the read gate holds and releases the follower', function () {
  this.timeout(120_000)
  let chain: TestChain
  let contract: string
  let firstBlock: number
  const alice = Wallet.createRandom()
  const bob = Wallet.createRandom()
  const seams: Chain[] = []

  before(async () => {
    ;({ chain, contract, firstBlock } = await startDeployedChain([alice.address, bob.address]))
  })
  after(async () => {
    try {
      await Promise.race([Promise.all(seams.map((s) => s.stop())), sleep(10_000)])
    } finally {
      await stopAllChains()
    }
  })

  function seam(key: string, readGate?: Gate): { chain: Chain; events: BatchPinEvent[]; lines: string[] } {
    const events: BatchPinEvent[] = []
    const lines: string[] = []
    const c = createChain({
      rpc: chain.rpc,
      contract,
      privateKey: key,
      fromBlock: firstBlock,
      // A minute: anything the follower reads within the test came from a new block or the release, never a poll.
      pollIntervalMs: 60_000,
      log: (l) => lines.push(l),
      onEvents: async (evs) => void events.push(...evs),
      ...(readGate ? { readGate } : {}),
    })
    seams.push(c)
    c.start()
    return { chain: c, events, lines }
  }

  it('held, the follower falls behind while pins go on; released, it catches up from its cursor at once', async () => {
    const sender = seam(alice.privateKey)
    const gate = new Gate()
    const follower = seam(bob.privateKey, gate)
    const pins = [request(), request(), request()]
    await sender.chain.submitPinBatch(pins[0]!)
    await waitFor('the first pin', () => follower.events.length === 1, { timeoutMs: 15_000, intervalMs: 20 })

    gate.hold()
    // The holder's own pins still go out: only reading is held.
    await follower.chain.submitPinBatch(pins[1]!)
    await sender.chain.submitPinBatch(pins[2]!)
    await sleep(1_000)
    expect(follower.events.map((e) => e.batchId)).to.deep.equal([pins[0]!.batchId])
    const status = follower.chain.status()
    expect(status.headBlock, 'new blocks are still seen').to.be.greaterThan(status.lastProcessedBlock)

    const t0 = Date.now()
    gate.release()
    await waitFor('the follower to catch up', () => follower.events.length === 3, { timeoutMs: 5_000, intervalMs: 10 })
    expect(Date.now() - t0, 'at the release, not at the next poll').to.be.below(3_000)
    expect(follower.events.map((e) => e.batchId)).to.deep.equal(pins.map((p) => p.batchId))
    await sleep(200)
    expect(follower.events).to.have.length(3)
    expect(follower.lines.filter((l) => !l.startsWith('chain: following'))).to.deep.equal([])
  })

  it('a follower stopped while held stops promptly', async () => {
    const gate = new Gate()
    gate.hold()
    const held = seam(bob.privateKey, gate)
    await sleep(500)
    const t0 = Date.now()
    await held.chain.stop()
    expect(Date.now() - t0).to.be.below(2_000)
    expect(held.events).to.deep.equal([])
  })
})
