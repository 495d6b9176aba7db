import { expect } from 'chai'
import { createHash, randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Gate } from '../../../../node/core/gate.js'
import { Aggregator } from '../../../../node/aggregator/aggregator.js'
import { BatchFetcher } from '../../../../node/aggregator/batch-fetcher.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { BlobFetcher } from '../../../../node/data/blob-fetcher.js'
import { BlobStore } from '../../../../node/data/blob-store.js'
import { dataHash } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import type { Data } from '../../../../node/model/index.js'
import { waitFor } from '../../../../network/process.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { MemoryStorage } from '../../../support/storage.js'
import { makePeerBatch, receivedNoting, storedNoting } from '../../../support/peer-batch.js'

/** Shared storage in memory that counts the downloads asked of it. */
class CountingStorage extends MemoryStorage {
  downloads = 0

  override download(ref: string): AsyncIterable<Uint8Array> {
    this.downloads++
    return super.download(ref)
  }
}

describe('read controls: the gate', () => {
  it('is open until held; a hold makes waiters wait, the release wakes them all at once, an abort ends a wait', async () => {
    const gate = new Gate()
    expect(gate.held).to.equal(false)
    await gate.whenOpen()
    gate.hold()
    gate.hold()
    expect(gate.held).to.equal(true)
    const woken: string[] = []
    const a = gate.whenOpen().then(() => woken.push('a'))
    const b = gate.whenOpen().then(() => woken.push('b'))
    const stop = new AbortController()
    const c = gate.whenOpen(stop.signal).then(() => woken.push('c'))
    await sleep(20)
    expect(woken).to.deep.equal([])
    stop.abort()
    await c
    expect(woken).to.deep.equal(['c'])
    gate.release()
    await Promise.all([a, b])
    expect(woken).to.deep.equal(['c', 'a', 'b'])
    expect(gate.held).to.equal(false)
    gate.release()
  })
})

/**
 * The fetchers of broadcast batches and public blobs with the IPFS read gate: while it is held nothing is downloaded
 * (and nothing retried or logged), and the release lets them fetch at once.
 */
describe('read controls: the fetchers stop reading IPFS while held', () => {
  const temp = new TempDirs()
  let repos: Repos
  let storage: CountingStorage
  let logs: string[]
  let reads: Gate
  const stops: (() => Promise<void>)[] = []

  beforeEach(async () => {
    repos = await openRepos(join(await temp.make('parley-read-gates-'), 'db'))
    storage = new CountingStorage()
    logs = []
    reads = new Gate()
  })
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop()
    await repos.db.close()
  })
  after(() => temp.cleanup())

  it('the batch fetcher downloads nothing while held, and fetches the batch as soon as it is released', async () => {
    const b = makePeerBatch('did:firefly:org/peer', '0x' + 'bb'.repeat(20), 't1')
    const ref = await storage.upload(new TextEncoder().encode(b.payload))
    const arrived: BatchId[] = []
    const agg = new Aggregator({ ...repos, validator: new DataValidatorImpl(() => undefined), definitions: [], log: (l) => logs.push(l), onOutcome: () => {} })
    agg.start()
    stops.push(() => agg.stop())
    const fetcher = new BatchFetcher({ ...repos, storage, log: (l) => logs.push(l), receive: receivedNoting(agg, arrived), announced: () => {}, refused: () => {}, reads })
    stops.push(() => fetcher.stop())
    reads.hold()
    fetcher.fetch({ ...b.pinned, payloadRef: ref })
    await sleep(300)
    expect(storage.downloads).to.equal(0)
    expect(repos.batches.get(b.pinned.batchId)).to.equal(undefined)
    reads.release()
    // Woken by the release itself: the download has begun before any timer (a retry or backoff) could fire.
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(storage.downloads, 'at the release, not after a backoff').to.equal(1)
    await waitFor('the batch', () => arrived.length === 1, { timeoutMs: 10_000, intervalMs: 5 })
    expect(repos.batches.get(b.pinned.batchId)?.state).to.equal('received')
    expect(storage.downloads).to.equal(1)
    expect(logs).to.deep.equal([])
  })

  it('a batch fetcher stopped while held ends its wait', async () => {
    const b = makePeerBatch('did:firefly:org/peer', '0x' + 'bb'.repeat(20), 't1')
    const fetcher = new BatchFetcher({ ...repos, storage, log: (l) => logs.push(l), receive: storedNoting(repos, []), announced: () => {}, refused: () => {}, reads })
    reads.hold()
    fetcher.fetch({ ...b.pinned, payloadRef: await storage.upload(new TextEncoder().encode(b.payload)) })
    await fetcher.stop()
    expect(storage.downloads).to.equal(0)
  })

  it('the blob fetcher downloads nothing while held, and fetches what is wanted at the release', async () => {
    const store = await BlobStore.open(join(await temp.make('parley-read-gates-blobs-'), 'blobs'))
    const settled: Hash[] = []
    const fetcher = new BlobFetcher({ db: repos.db, data: repos.data, blobs: repos.blobs, refs: repos.refs, blobStore: store, storage, log: (l) => logs.push(l), settled: (h) => settled.push(h), reads })
    stops.push(() => fetcher.stop())
    const wanted: { hash: Hash; size: number; public: string }[] = []
    for (let i = 0; i < 3; i++) {
      const bytes = randomBytes(1000 + i)
      const hash = createHash('sha256').update(bytes).digest('hex') as Hash
      const d: Data = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: null, blobHash: hash }), created: now(), value: null, blob: { hash, size: bytes.length, name: '' } }
      await repos.db.transaction((tx) => repos.data.insert(tx, d, true))
      wanted.push({ hash, size: bytes.length, public: await storage.upload(bytes) })
    }
    reads.hold()
    for (const w of wanted) fetcher.want(w)
    await sleep(300)
    expect(storage.downloads).to.equal(0)
    expect(settled).to.deep.equal([])
    reads.release()
    await waitFor('the blobs', () => settled.length === 3, { timeoutMs: 2_000, intervalMs: 5 })
    expect(settled.sort()).to.deep.equal(wanted.map((w) => w.hash).sort())
    for (const w of wanted) expect(repos.blobs.has(w.hash)).to.equal(true)
    expect(storage.downloads).to.equal(3)
    expect(logs).to.deep.equal([])
  })
})
