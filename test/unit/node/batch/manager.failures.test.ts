import { expect } from 'chai'
import { join } from 'node:path'
import { BatchManager } from '../../../../node/batch/manager.js'
import { BlobPublisher } from '../../../../node/batch/blob-publisher.js'
import type { SealedBatchHolder } from '../../../../node/batch/assembler.js'
import { BlobStore } from '../../../../node/data/blob-store.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { Confirmations } from '../../../../node/events/confirmations.js'
import { MessageSender } from '../../../../node/messaging/sender.js'
import { parseMessageInput } from '../../../../node/messaging/input.js'
import type { Chain, ChainStatus, PinBatchRequest, PinSubmission } from '../../../../node/chain/types.js'
import { pinSubmission } from '../../../../node/chain/pin-submission.js'
import { parseJsonRaw } from '../../../../node/core/json.js'
import { localIdentity, type Message } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, registerOrg, type Repos } from '../../../support/repos.js'
import { MemoryStorage } from '../../../support/storage.js'
import { waitUntil } from '../../../support/wait.js'

const KEY = '0x' + 'aa'.repeat(20)

/** The chain seam: takes every pin at once; the first `reverting` of them fail after they were sent, as a reverted transaction does. */
class RevertingChain implements Chain {
  readonly pins: PinBatchRequest[] = []
  reverting = 0

  start(): void {}

  submitPinBatch(req: PinBatchRequest): PinSubmission {
    this.pins.push(req)
    const n = this.pins.length
    const txHash = `0x${n.toString(16).padStart(64, '0')}`
    if (this.reverting > 0) {
      this.reverting--
      return pinSubmission(Promise.resolve(txHash), Promise.reject(new Error(`transaction ${txHash} reverted`)))
    }
    return pinSubmission(Promise.resolve(txHash), Promise.resolve({ txHash, blockNumber: n }))
  }

  status(): ChainStatus {
    return { connected: true, rpc: 'memory', contract: '0x', lastProcessedBlock: this.pins.length }
  }

  async stop(): Promise<void> {}
}

/**
 * What the batch manager does when a step after the upload fails: a pin the chain took and then lost is sent again
 * and recorded once; a seal that fails stops sealing until the next start, which seals what it left.
 */
describe('batch manager: a pin lost after it was sent, a seal that fails', () => {
  const temp = new TempDirs()
  let repos: Repos
  let chain: RevertingChain
  let logs: string[]
  const managers: BatchManager[] = []
  const self = localIdentity('org0', 'node0', KEY)

  beforeEach(async () => {
    const dir = await temp.make('parley-batch-failures-')
    repos = await openRepos(join(dir, 'db'))
    await registerOrg(repos.db, repos.identities, 'org0', KEY)
    chain = new RevertingChain()
    logs = []
  })
  afterEach(async () => {
    for (const m of managers.splice(0)) await m.stop()
    await repos.db.close()
    await temp.cleanup()
  })

  async function manager(recent?: SealedBatchHolder): Promise<BatchManager> {
    const storage = new MemoryStorage()
    const blobStore = await BlobStore.open(join(await temp.make('parley-batch-blobs-'), 'blobs'))
    const m = new BatchManager({
      ...repos,
      published: () => {},
      storage,
      chain,
      self,
      config: { size: 1, timeoutMs: 60_000, payloadLimit: 1_000_000 },
      blobs: new BlobPublisher({ db: repos.db, data: repos.data, refs: repos.refs, blobStore, storage }),
      log: (l) => logs.push(l),
      ...(recent ? { recent } : {}),
      retry: { minMs: 5, maxMs: 50 },
    })
    managers.push(m)
    m.start()
    return m
  }
  function sender(sink: BatchManager): (n: number) => Promise<Message> {
    const s = new MessageSender({ ...repos, self, sink, validator: new DataValidatorImpl(() => undefined), confirmations: new Confirmations() })
    return (n) => s.broadcast('default', parseMessageInput(parseJsonRaw(JSON.stringify({ data: [{ value: { n } }] })), { allowGroup: false }))
  }
  const batchOf = (m: Message) => repos.messages.get(m.header.id)?.batch
  const pinned = (m: Message) => batchOf(m) !== undefined && repos.batches.get(batchOf(m)!)?.state === 'pinned'

  it('sends a pin again when its transaction fails after it was sent, and records the one that is mined', async () => {
    chain.reverting = 1
    const send = sender(await manager())
    const m = await send(1)
    await waitUntil('the batch pinned', () => pinned(m), { intervalMs: 5 })
    await waitUntil('the recovery logged', () => logs.some((l) => l.endsWith('dispatched after retrying')), { intervalMs: 5 })
    const b = repos.batches.get(batchOf(m)!)!
    // The same request twice: the same batch, hash and payload reference; the second transaction is the one recorded.
    expect(chain.pins).to.have.length(2)
    expect(chain.pins[1]).to.deep.equal(chain.pins[0])
    expect(b).to.include({ state: 'pinned', chainTx: `0x${'2'.padStart(64, '0')}`, payloadRef: chain.pins[0]!.payloadRef })
    expect(logs).to.deep.equal([`batch ${b.id}: dispatch failed, retrying: transaction 0x${'1'.padStart(64, '0')} reverted`, `batch ${b.id}: dispatched after retrying`])
  })

  it('stops sealing after a seal fails, logging it once, and seals what it left at the next start', async () => {
    let failing = true
    const holder: SealedBatchHolder = {
      sealed: () => {
        if (failing) throw new Error('the holder broke')
      },
    }
    const send = sender(await manager(holder))
    const first = await send(1)
    await waitUntil('the failed seal logged', () => logs.some((l) => l.includes('sealing failed')), { intervalMs: 5 })
    const second = await send(2)
    await waitUntil('the failed dispatch logged', () => logs.some((l) => l.endsWith('left for the next start')), { intervalMs: 5 })
    // The seal rolled back whole: no batch, both messages accepted and waiting, nothing sent to the chain.
    expect([first, second].map(batchOf)).to.deep.equal([undefined, undefined])
    expect(repos.messages.unbatched().map((x) => x.header.id)).to.deep.equal([first.header.id, second.header.id])
    expect(repos.batches.undispatched()).to.deep.equal([])
    expect(chain.pins).to.deep.equal([])
    expect(logs).to.have.length(2)
    expect(logs[0]).to.equal(`batch: default/${self.orgDid}: sealing failed, no more batches until the next start (their messages stay accepted): the holder broke`)
    expect(logs[1]).to.match(/^batch [0-9a-f-]{36}: the holder broke; left for the next start$/)

    await managers[0]!.stop()
    failing = false
    await manager(holder)
    await waitUntil('both sealed and pinned at the next start', () => pinned(first) && pinned(second), { intervalMs: 5 })
    expect(chain.pins.map((p) => p.batchId)).to.deep.equal([batchOf(first), batchOf(second)])
  })

  it('seals nothing handed to it once stopped, and refuses a batch type it has no dispatcher for', async () => {
    const m = await manager()
    const send = sender(m)
    const sent = await send(1)
    const privately: Message = { ...sent, header: { ...sent.header, type: 'private', group: 'ab'.repeat(32) as never } }
    expect(() => m.accepted(privately, [], 100)).to.throw('no dispatcher for private batches')
    await m.stop()
    const late = await send(3)
    m.accepted(late, [], 100)
    await new Promise((r) => setImmediate(r))
    expect(batchOf(late)).to.equal(undefined)
    expect(repos.messages.unbatched().map((x) => x.header.id)).to.deep.equal([late.header.id])
  })
})
