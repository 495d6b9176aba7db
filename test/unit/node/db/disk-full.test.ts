import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Database } from '../../../../node/db/database.js'
import { migrations } from '../../../../node/db/schema/index.js'
import { Aggregator } from '../../../../node/aggregator/aggregator.js'
import { BatchFetcher } from '../../../../node/aggregator/batch-fetcher.js'
import { BatchManager } from '../../../../node/batch/manager.js'
import { BlobPublisher } from '../../../../node/batch/blob-publisher.js'
import { BlobStore } from '../../../../node/data/blob-store.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { MessageSender } from '../../../../node/messaging/sender.js'
import { parseMessageInput } from '../../../../node/messaging/input.js'
import { Confirmations } from '../../../../node/events/confirmations.js'
import { registerSelf } from '../../../../node/definitions/registration.js'
import type { Chain, ChainStatus, PinBatchRequest, PinSubmission } from '../../../../node/chain/types.js'
import { pinSubmission } from '../../../../node/chain/pin-submission.js'
import type { BatchId } from '../../../../node/core/ids.js'
import { parseJsonRaw } from '../../../../node/core/json.js'
import { localIdentity, type Message } from '../../../../node/model/index.js'
import { waitFor } from '../../../../network/process.js'
import { openTestDatabase, registerOrg, reposOver, type Repos } from '../../../support/repos.js'
import { MemoryStorage } from '../../../support/storage.js'
import { DiskFullFault } from '../../../support/db/disk-faults.js'
import { makePeerBatch, peerBatch, pinPeerBatch, receivedNoting } from '../../../support/peer-batch.js'

const KEY = '0x' + 'aa'.repeat(20)
const PEER_KEY = '0x' + 'bb'.repeat(20)
const PEER = 'did:firefly:org/peer'

/** The chain seam, mining each pin at once unless held (a chain slow to mine). */
class HeldChain implements Chain {
  readonly pins: PinBatchRequest[] = []
  private held: { promise: Promise<void>; release: () => void } | undefined

  hold(): void {
    let release!: () => void
    this.held = { promise: new Promise<void>((r) => (release = r)), release }
  }

  release(): void {
    this.held?.release()
    this.held = undefined
  }

  start(): void {}

  submitPinBatch(req: PinBatchRequest): PinSubmission {
    this.pins.push(req)
    const n = this.pins.length
    const txHash = `0x${n.toString(16).padStart(64, '0')}`
    return pinSubmission(Promise.resolve(txHash), (async () => {
      await this.held?.promise
      return { txHash, blockNumber: n }
    })())
  }

  status(): ChainStatus {
    return { connected: true, rpc: 'memory', contract: '0x', lastProcessedBlock: 0 }
  }

  async stop(): Promise<void> {}
}

/**
 * Background loops over a real database whose journal write the test refuses (ENOSPC): each meets a refused write,
 * logs it once, does not die or give up, and finishes its work by itself once the disk has room again.
 */
describe('storage: background work survives a full disk and resumes by itself', function () {
  let dir: string
  let fault: DiskFullFault
  let repos: Repos
  let db: Database
  let logs: string[]
  const stops: (() => Promise<void>)[] = []

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-storage-loops-'))
    fault = new DiskFullFault()
    logs = []
    db = await openTestDatabase(join(dir, 'db'), migrations, 'sqljs', { wrapJournal: fault.wrap, log: (l) => logs.push(l) })
    repos = reposOver(db)
    await registerOrg(db, repos.identities, 'org0', KEY)
    await registerOrg(db, repos.identities, 'peer', PEER_KEY)
  })
  afterEach(async () => {
    fault.full = false
    for (const stop of stops.splice(0).reverse()) await stop()
    await db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  /**
   * Fills the disk and leaves one write waiting in the stalled journal; resolves once the database says so, with
   * that write (which settles once the disk has room).
   */
  async function fillDisk(): Promise<{ written: Promise<void> }> {
    fault.full = true
    const written = db.transaction((tx) => repos.state.set(tx, 'test.stalled', 'yes'))
    await waitFor('the stall', () => db.diskFull !== undefined, { intervalMs: 10 })
    return { written }
  }

  const linesLike = (re: RegExp) => logs.filter((l) => re.test(l))

  it('the aggregator: a pass refused while the disk is full is walked again once it has room', async () => {
    const first = await peerBatch(repos, PEER, PEER_KEY, 't1')
    const agg = new Aggregator({ ...repos, validator: new DataValidatorImpl(() => undefined), definitions: [], log: (l) => logs.push(l), onOutcome: () => {} })
    stops.push(() => agg.stop())
    const { written: stalled } = await fillDisk()
    agg.start()
    // Refused and logged; a wake while the disk is still full neither walks it again nor logs again.
    await waitFor('the refused pass', () => linesLike(/^aggregator: pass failed/).length > 0, { intervalMs: 10 })
    agg.wake()
    await agg.whenIdle()
    expect(repos.messages.get(first.messageId)?.state).to.equal('pending')
    expect(linesLike(/^aggregator: pass failed, will retry: the disk holding the database is full/)).to.have.length(1)

    fault.full = false
    await stalled
    await waitFor('the confirmation', () => repos.messages.get(first.messageId)?.state === 'confirmed', { timeoutMs: 5000, intervalMs: 20 })
    await agg.whenIdle()
    expect(linesLike(/^aggregator: passes succeed again/)).to.have.length(1)
    // And on as usual.
    const second = await peerBatch(repos, PEER, PEER_KEY, 't1')
    agg.wake()
    await waitFor('the next confirmation', () => repos.messages.get(second.messageId)?.state === 'confirmed', { timeoutMs: 5000, intervalMs: 20 })
  })

  it('the batch fetcher: a batch it cannot store is stored once there is room, without a restart', async () => {
    const storage = new MemoryStorage()
    const b = makePeerBatch(PEER, PEER_KEY, 't1')
    await pinPeerBatch(repos, b)
    const ref = await storage.upload(new TextEncoder().encode(b.payload))
    const arrived: BatchId[] = []
    // Stored by the aggregator, which walks the batch's pin in the same transaction (Aggregator.receive).
    const agg = new Aggregator({ ...repos, validator: new DataValidatorImpl(() => undefined), definitions: [], log: (l) => logs.push(l), onOutcome: () => {} })
    agg.start()
    stops.push(() => agg.stop())
    const fetcher = new BatchFetcher({ ...repos, storage, log: (l) => logs.push(l), receive: receivedNoting(agg, arrived), announced: () => {}, refused: () => {} })
    stops.push(() => fetcher.stop())
    const { written: stalled } = await fillDisk()
    fetcher.fetch({ ...b.pinned, payloadRef: ref })
    await waitFor('the refused store', () => linesLike(/^batch fetcher: cannot store batches/).length > 0, { intervalMs: 10 })
    expect(repos.batches.get(b.pinned.batchId)).to.equal(undefined)
    expect(linesLike(/^batch fetcher: cannot store batches, retrying: the disk holding the database is full/)).to.have.length(1)

    fault.full = false
    await stalled
    await waitFor('the batch stored', () => arrived.length === 1, { timeoutMs: 5000, intervalMs: 20 })
    expect(repos.batches.get(b.pinned.batchId)?.state).to.equal('received')
    expect(repos.messages.get(b.messageId)?.state).to.equal('confirmed')
    expect(linesLike(/^batch fetcher: storing batches again/)).to.have.length(1)
    expect(linesLike(/^aggregator:/), 'a store refused is the fetcher’s to retry').to.deep.equal([])
  })

  it('the batch manager: sealing waits for room instead of stopping for good, and a mined pin is recorded once there is', async () => {
    const storage = new MemoryStorage()
    const chain = new HeldChain()
    const blobStore = await BlobStore.open(join(dir, 'blobs'))
    const manager = new BatchManager({
      ...repos,
      published: () => {},
      storage,
      chain,
      self: localIdentity('org0', 'node0', KEY),
      config: { size: 100, timeoutMs: 100, payloadLimit: 1_000_000 },
      blobs: new BlobPublisher({ db, data: repos.data, refs: repos.refs, blobStore, storage }),
      log: (l) => logs.push(l),
    })
    stops.push(() => manager.stop())
    manager.start()
    const sender = new MessageSender({ ...repos, self: localIdentity('org0', 'node0', KEY), sink: manager, validator: new DataValidatorImpl(() => undefined), confirmations: new Confirmations() })
    const send = (n: number): Promise<Message> => sender.broadcast('default', parseMessageInput(parseJsonRaw(JSON.stringify({ data: [{ value: { n } }] })), { allowGroup: false }))
    const batchOf = (m: Message) => repos.messages.get(m.header.id)?.batch

    // Accepted before the disk fills; their batch's timeout passes while it is full.
    const early = [await send(1), await send(2)]
    let { written: stalled } = await fillDisk()
    await sleep(400)
    expect(early.map(batchOf)).to.deep.equal([undefined, undefined])
    fault.full = false
    await stalled
    await waitFor('the batch sealed and pinned', () => early.every((m) => batchOf(m) !== undefined && repos.batches.get(batchOf(m)!)?.state === 'pinned'), { timeoutMs: 5000, intervalMs: 20 })
    expect(linesLike(/sealing failed/)).to.deep.equal([])

    // The chain mines a pin while the disk is full: recording it waits, rather than leaving the batch to be pinned again.
    chain.hold()
    const late = await send(3)
    await waitFor('the pin submitted', () => chain.pins.length === 2, { timeoutMs: 5000, intervalMs: 20 })
    ;({ written: stalled } = await fillDisk())
    chain.release()
    await sleep(600)
    expect(repos.batches.get(batchOf(late)!)?.state).to.equal('sealed')
    fault.full = false
    await stalled
    await waitFor('the pin recorded', () => repos.batches.get(batchOf(late)!)?.state === 'pinned', { timeoutMs: 5000, intervalMs: 20 })
    expect(chain.pins).to.have.length(2)
    expect(linesLike(/left for the next start/)).to.deep.equal([])
  })

  it('registration: a claim it cannot record yet is recorded and sent once there is room', async () => {
    const sent: Message[] = []
    const sender = new MessageSender({ ...repos, self: localIdentity('org1', 'node1', KEY), sink: { accepted: (m) => sent.push(m) }, validator: new DataValidatorImpl(() => undefined), confirmations: new Confirmations() })
    const stop = new AbortController()
    const { written: stalled } = await fillDisk()
    const registration = registerSelf({ ...repos, sender, self: localIdentity('org1', 'node1', KEY), profile: { id: 'org1/node1', endpoint: 'https://127.0.0.1:1', cert: 'none' }, log: (l) => logs.push(l), signal: stop.signal })
    stops.push(async () => {
      stop.abort()
      await registration
    })
    await waitFor('the refused claim', () => linesLike(/^identity: registration failed/).length > 0, { intervalMs: 10 })
    expect(sent).to.deep.equal([])
    expect(linesLike(/^identity: registration failed, retrying: the disk holding the database is full/)).to.have.length(1)

    fault.full = false
    await stalled
    await registration
    expect(sent.map((m) => m.header.tag)).to.have.length(2)
    expect(repos.state.get('identity.org.claimed')).to.equal(sent[0]!.header.id)
    expect(repos.state.get('identity.node.claimed')).to.equal(sent[1]!.header.id)
    expect(linesLike(/^identity: registration goes on after retrying/)).to.have.length(1)
  })
})
