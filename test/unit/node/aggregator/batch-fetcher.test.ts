import { expect } from 'chai'
import { join } from 'node:path'
import { BatchFetcher } from '../../../../node/aggregator/batch-fetcher.js'
import { parseBatch, serializeBatch } from '../../../../node/batch/payload.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { messageHash } from '../../../../node/core/hashes.js'
import type { BatchId } from '../../../../node/core/ids.js'
import { MAX_BATCH_PAYLOAD_BYTES, type BatchPayload, type PinnedBatch } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { makePeerBatch, storedNoting } from '../../../support/peer-batch.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { MemoryStorage } from '../../../support/storage.js'
import { waitUntil } from '../../../support/wait.js'

const AUTHOR = 'did:firefly:org/peer'
const KEY = '0x' + 'bb'.repeat(20)

/** Shared storage in memory that also serves, under `huge`, a payload one chunk past the largest a batch may be. */
class OversizeStorage extends MemoryStorage {
  static readonly huge = 'ref-huge'
  override async *download(ref: string): AsyncIterable<Uint8Array> {
    if (ref !== OversizeStorage.huge) return yield* super.download(ref)
    const chunk = new Uint8Array(1024 * 1024)
    for (let sent = 0; sent <= MAX_BATCH_PAYLOAD_BYTES; sent += chunk.length) yield chunk
  }
}

/**
 * The broadcast batch fetcher over a real database, shared storage in memory: each payload it must record as refused
 * (and why), a download retried until the storage answers, and one payload named by two pin events fetched once.
 */
describe('batch fetcher: what it stores, refuses and retries', () => {
  const temp = new TempDirs()
  let repos: Repos
  let storage: OversizeStorage
  let fetcher: BatchFetcher
  let logs: string[]
  let arrived: BatchId[]
  let refused: PinnedBatch[]

  beforeEach(async () => {
    repos = await openRepos(join(await temp.make('parley-batch-fetcher-'), 'db'))
    storage = new OversizeStorage()
    logs = []
    arrived = []
    refused = []
    fetcher = new BatchFetcher({ ...repos, storage, log: (l) => logs.push(l), receive: storedNoting(repos, arrived), refused: (p) => refused.push(p), announced: () => {} })
  })
  afterEach(async () => {
    await fetcher.stop()
    await repos.db.close()
  })
  after(() => temp.cleanup())

  /** A peer's batch published in storage (as `text` when given), and the pin event that names it. */
  async function published(text?: (b: BatchPayload) => string): Promise<PinnedBatch> {
    const b = makePeerBatch(AUTHOR, KEY, 't1')
    const payload = text ? text(parseBatch(b.payload)) : b.payload
    return { ...b.pinned, payloadRef: await storage.upload(new TextEncoder().encode(payload)) }
  }

  /** Fetches `p` and answers the reason recorded once it is refused, checking what a refusal leaves. */
  async function refusal(p: PinnedBatch): Promise<string> {
    fetcher.fetch(p)
    await waitUntil('the refusal', () => refused.length === 1, { intervalMs: 5 })
    expect(refused).to.deep.equal([p])
    expect(arrived).to.deep.equal([])
    const record = repos.batches.byIdHash(p.batchId, p.batchHash)!
    expect(record).to.include({ state: 'refused', key: p.signer, payloadRef: p.payloadRef, txId: p.txId })
    expect(logs).to.deep.equal([`batch ${p.batchId} pinned by ${p.signer} refused: ${record.reason}`])
    return record.reason!
  }

  it('refuses a pin whose payload reference is not one of shared storage, without downloading it', async () => {
    const p = { ...(await published()), payloadRef: 'https://example.com/batch.json' }
    expect(await refusal(p)).to.equal('payload reference "https://example.com/batch.json" is not a shared-storage reference')
  })

  it('refuses a payload past the largest a batch may be, at that size', async () => {
    const p = { ...(await published()), payloadRef: OversizeStorage.huge }
    expect(await refusal(p)).to.equal(`batch payload ${OversizeStorage.huge} is larger than ${MAX_BATCH_PAYLOAD_BYTES} bytes`)
  })

  it('refuses a payload that is not JSON', async () => {
    expect(await refusal(await published(() => '{"id": "x"'))).to.match(/^unexpected end of JSON input/)
  })

  it('refuses JSON that is not a batch', async () => {
    expect(await refusal(await published(() => '{"id": "x"}'))).to.equal('malformed batch: payload must be an object')
  })

  it('refuses a batch whose pin names another hash', async () => {
    const p = await published()
    const claimed = { ...p, batchHash: 'f'.repeat(64) as PinnedBatch['batchHash'] }
    const reason = await refusal(claimed)
    expect(reason).to.equal(`manifest hash ${p.batchHash} differs from the pinned batch hash ${claimed.batchHash}`)
  })

  it('refuses a private batch published in shared storage', async () => {
    const p = await published((b) => serializeBatch({ ...b, type: 'private' }))
    expect(await refusal(p)).to.equal('a private batch cannot be published in shared storage')
  })

  it('refuses a private message inside a broadcast batch', async () => {
    let id = ''
    const p = await published((b) => {
      const m = b.messages[0]!
      const header = { ...m.header, type: 'private' as const, group: 'ab'.repeat(32) as never }
      id = header.id
      const messages = [{ ...m, header, hash: messageHash(header) }]
      return serializeBatch({ ...b, messages, hash: sealManifest({ ...b, messages }).hash })
    })
    // The pin names the batch as its author sealed it.
    const sealed = parseBatch(storage.content.get(p.payloadRef)!.toString('utf8'))
    expect(await refusal({ ...p, batchHash: sealed.hash })).to.equal(`message ${id}: a private message cannot travel in a broadcast batch`)
  })

  it('retries a download the storage does not answer, logging it once, then stores the batch', async () => {
    const p = await published()
    storage.failDownloads = 2
    fetcher.fetch(p)
    await waitUntil('the batch stored', () => arrived.length === 1, { intervalMs: 5 })
    expect(arrived).to.deep.equal([p.batchId])
    expect(repos.batches.byIdHash(p.batchId, p.batchHash)?.state).to.equal('received')
    expect(logs).to.deep.equal([`batch ${p.batchId}: cannot download ${p.payloadRef} yet: storage unreachable; retrying`])
  })

  it('fetches a payload once for three pin events naming it at once, and not at all once it is held', async () => {
    const p = await published()
    const downloads: string[] = []
    const download = storage.download.bind(storage)
    storage.download = (ref: string) => {
      downloads.push(ref)
      return download(ref)
    }
    fetcher.fetch(p)
    fetcher.fetch({ ...p, eventId: 'a second event' })
    fetcher.fetch({ ...p, eventId: 'a third event' })
    await waitUntil('the batch stored', () => arrived.length === 1, { intervalMs: 5 })
    fetcher.fetch(p)
    await fetcher.stop()
    expect(downloads).to.deep.equal([p.payloadRef])
    expect(arrived).to.deep.equal([p.batchId])
    expect(refused).to.deep.equal([])
  })
})
