import { expect } from 'chai'
import { createHash, randomBytes } from 'node:crypto'
import { readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Database } from '../../../../node/db/database.js'
import { asOwn, type DataRepo } from '../../../../node/db/repos/data.js'
import type { BlobsRepo } from '../../../../node/db/repos/blobs.js'
import type { BlobRefsRepo } from '../../../../node/db/repos/blob-refs.js'
import { BlobStore } from '../../../../node/data/blob-store.js'
import { isParleyError } from '../../../../node/core/errors.js'
import { BlobPublisher } from '../../../../node/batch/blob-publisher.js'
import { BlobFetcher } from '../../../../node/data/blob-fetcher.js'
import { dataHash, dataRefsHash, messageHash } from '../../../../node/core/hashes.js'
import { newId, type BatchId, type DataId, type Hash, type MessageId, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { waitFor } from '../../../../network/process.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { type Data, type Header, type Message } from '../../../../node/model/index.js'
import { openRepos, registerOrg, withDigest, type Repos } from '../../../support/repos.js'
import { MemoryStorage } from '../../../support/storage.js'
import { chunksOf, collect } from '../../../support/streams.js'

const MEMBER_KEY = '0x' + '0c'.repeat(20)
const sha = (b: Uint8Array): Hash => createHash('sha256').update(b).digest('hex') as Hash

/** Shared storage in memory, counting its uploads and keeping the names they were given. */
class CountingStorage extends MemoryStorage {
  get uploads(): number {
    return this.uploaded.length
  }

  get names(): string[] {
    return this.uploaded.map((u) => u.name ?? '')
  }
}

describe('blobs', () => {
  const temp = new TempDirs()
  let db: Database
  let repos: Repos
  let data: DataRepo
  let blobs: BlobsRepo
  let refs: BlobRefsRepo
  let store: BlobStore
  let storeDir: string
  let storage: CountingStorage

  beforeEach(async () => {
    const dir = await temp.make('parley-blobs-')
    repos = await openRepos(join(dir, 'db'))
    ;({ db, data, blobs, refs } = repos)
    await registerOrg(db, repos.identities, 'member', MEMBER_KEY)
    storeDir = join(dir, 'blobs')
    store = await BlobStore.open(storeDir)
    storage = new CountingStorage()
  })
  afterEach(async () => {
    await db.close()
  })
  after(() => temp.cleanup())

  /** A data item with a blob, named by a pending message of a registered member (`key`), as a received batch stores it. */
  /** `received`: stored as a peer's item, which the message names by its digest (else this member's own). */
  async function blobData(bytes: Buffer, extra: Partial<NonNullable<Data['blob']>> = {}, key = MEMBER_KEY, received = false): Promise<Data> {
    const hash = sha(bytes)
    const plain: Data = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: null, blobHash: hash }), created: now(), value: null, blob: { hash, size: bytes.length, name: 'b.bin', ...extra } }
    const d = received ? withDigest(plain) : plain
    const refs = [{ id: d.id, hash: d.hash, ...(d.digest ? { digest: d.digest } : {}) }]
    const header: Header = { id: newId<MessageId>(), type: 'broadcast', txtype: 'batch_pin', author: 'did:firefly:org/member', key, created: now(), namespace: 'default', topics: ['t'], datahash: dataRefsHash(refs) }
    const m: Message = { header, hash: messageHash(header), state: 'pending', data: refs }
    await db.transaction((tx) => {
      data.insert(tx, d, !received)
      repos.messages.insertMany(tx, [m], false)
    })
    messageOf.set(d.id, { id: header.id, hash: m.hash })
    return d
  }
  const messageOf = new Map<string, { id: MessageId; hash: Hash }>()

  describe('store', () => {
    it('keeps a blob under its hash, and refuses one that differs from what was announced without leaving a file', async () => {
      const bytes = randomBytes(300_000)
      const stored = await store.write(chunksOf(bytes))
      expect(stored).to.deep.equal({ hash: sha(bytes), size: bytes.length })
      expect(await collect((await store.read(stored.hash))!.stream)).to.deep.equal(bytes)
      let err: unknown
      try {
        await store.write(chunksOf(randomBytes(1000)), { expect: { hash: stored.hash, size: 1000 } })
      } catch (e) {
        err = e
      }
      expect(isParleyError(err, 'BAD_PEER_DATA')).to.equal(true)
      try {
        await store.write(chunksOf(randomBytes(5000)), { expect: { hash: stored.hash, size: 1000 } })
      } catch (e) {
        err = e
      }
      expect((err as Error).message).to.match(/larger than the announced/)
      expect(readdirSync(join(storeDir, 'tmp'))).to.deep.equal([])
    })

    it('sweeps blob files nothing records as held, and keeps the held ones', async () => {
      const kept = await store.write(chunksOf(randomBytes(1000)))
      const orphan = await store.write(chunksOf(randomBytes(1000)))
      await db.transaction((tx) => blobs.insert(tx, { hash: kept.hash, size: kept.size, created: now() }))
      expect(await store.sweep((h) => blobs.has(h))).to.equal(1)
      expect(await store.read(orphan.hash)).to.equal(undefined)
      expect(await store.read(kept.hash)).not.to.equal(undefined)
    })
  })

  describe('store: bounds, leftovers and discarded files', () => {
    it('clears what an interrupted write left in its temporary folder when it opens', async () => {
      writeFileSync(join(storeDir, 'tmp', 'interrupted'), 'half a blob')
      await BlobStore.open(storeDir)
      expect(readdirSync(join(storeDir, 'tmp'))).to.deep.equal([])
    })

    it('refuses a blob over the size it is given, keeping nothing of it', async () => {
      let err: unknown
      await store.write(chunksOf(randomBytes(5000)), { maxBytes: 4096 }).catch((e: unknown) => (err = e))
      expect(err).to.include({ code: 'PAYLOAD_TOO_LARGE', message: 'blob is larger than 4096 bytes' })
      expect(readdirSync(join(storeDir, 'tmp'))).to.deep.equal([])
      expect(await store.write(chunksOf(randomBytes(4096)), { maxBytes: 4096 })).to.include({ size: 4096 })
    })

    it('removes a discarded file once nothing holds it and no write landed it just now', async () => {
      let clock = 1_000_000
      const timed = await BlobStore.open(storeDir, { now: () => clock })
      const landed = await timed.write(chunksOf(randomBytes(100)))
      const heldAgain = await timed.write(chunksOf(randomBytes(100)))
      timed.discard(landed.hash)
      timed.discard(heldAgain.hash)
      // Landed just now: kept for a later call; held again: kept and no longer discarded.
      expect(await timed.removeDiscarded((h) => h === heldAgain.hash)).to.equal(0)
      clock += 24 * 3_600_000
      expect(await timed.removeDiscarded(() => false)).to.equal(1)
      expect(await timed.read(landed.hash)).to.equal(undefined)
      expect(await timed.read(heldAgain.hash)).to.not.equal(undefined)
    })

    it('names no file for what is not a blob hash, and fails the iteration of a blob it does not hold', async () => {
      expect(() => store.path('../etc/passwd' as Hash)).to.throw('not a blob hash: ../etc/passwd')
      let err: unknown
      try {
        for await (const chunk of store.content('ab'.repeat(32) as Hash)) void chunk
      } catch (e) {
        err = e
      }
      expect(err).to.include({ code: 'NOT_FOUND', message: `blob ${'ab'.repeat(32)} is not in the blob store` })
    })
  })

  describe('publisher', () => {
    it('publishes each unpublished blob once, records the reference, and leaves published ones alone', async () => {
      const bytes = randomBytes(200_000)
      await store.write(chunksOf(bytes))
      const a = await blobData(bytes, { name: 'docs/../a.pdf' })
      const b = await blobData(bytes)
      const published = await blobData(randomBytes(10), { public: 'ref-already' })
      const publisher = new BlobPublisher({ db, data, refs, blobStore: store, storage })
      expect(await publisher.publishAll([a, b, published])).to.equal(true)
      expect(storage.uploads, 'two data items with one blob: one upload').to.equal(1)
      const ref = `ref-${sha(bytes)}`
      expect(data.get(a.id)!.blob!.public).to.equal(ref)
      expect(data.get(b.id)!.blob!.public).to.equal(ref)
      expect(storage.content.get(ref)).to.deep.equal(bytes)
      expect(storage.names, 'published under its hash, never a user-given name with slashes').to.deep.equal([sha(bytes)])
      expect(refs.verdict({ hash: sha(bytes), size: bytes.length, public: ref }), 'its own reference is verified by construction').to.deep.equal({ ok: true })
      // The batch is rebuilt from the database: a second dispatch (e.g. after a restart) publishes nothing.
      expect(await publisher.publishAll([data.get(a.id)!, data.get(b.id)!, published])).to.equal(false)
      expect(storage.uploads).to.equal(1)
    })

    it('fails (so the dispatch retries) when the blob is not held', async () => {
      const d = await blobData(randomBytes(100))
      const publisher = new BlobPublisher({ db, data, refs, blobStore: store, storage })
      let err: unknown
      try {
        await publisher.publishAll([d])
      } catch (e) {
        err = e
      }
      expect((err as Error).message).to.match(/not held/)
    })
  })

  describe('fetcher', () => {
    function fetcher(settled: Hash[]) {
      return new BlobFetcher({ db, data, blobs, refs, blobStore: store, storage, log: () => {}, settled: (h) => settled.push(h) })
    }

    it('fetches an announced blob through a storage outage, verifies it and records it as held', async () => {
      const bytes = randomBytes(150_000)
      const ref = await storage.upload(bytes)
      const d = await blobData(bytes, { public: ref })
      storage.failDownloads = 2
      const settled: Hash[] = []
      const f = fetcher(settled)
      f.want({ hash: d.blob!.hash, size: bytes.length, public: ref })
      await waitFor('the blob to settle', async () => settled.length > 0, { timeoutMs: 10_000, intervalMs: 20 })
      expect(settled).to.deep.equal([d.blob!.hash])
      expect(blobs.has(d.blob!.hash)).to.equal(true)
      expect(await collect((await store.read(d.blob!.hash))!.stream)).to.deep.equal(bytes)
      f.stop()
    })

    it('blobs nobody serves yet do not hold up the others (a retry gives up its slot)', async () => {
      const missing = [await blobData(randomBytes(10), { public: 'ref-nobody-1' }), await blobData(randomBytes(10), { public: 'ref-nobody-2' }), await blobData(randomBytes(10), { public: 'ref-nobody-3' })]
      const bytes = randomBytes(5000)
      const ref = await storage.upload(bytes)
      const d = await blobData(bytes, { public: ref })
      const settled: Hash[] = []
      const f = fetcher(settled)
      for (const m of missing) f.want({ hash: m.blob!.hash, size: m.blob!.size, public: m.blob!.public! })
      f.want({ hash: d.blob!.hash, size: bytes.length, public: ref })
      await waitFor('the servable blob to settle', async () => settled.includes(d.blob!.hash), { timeoutMs: 5_000, intervalMs: 20 })
      expect(settled).to.deep.equal([d.blob!.hash])
      f.stop()
    })

    it('records a bad verdict when the published content is not the announced blob, or the reference is invalid', async () => {
      const wrong = await storage.upload(randomBytes(1000))
      const liar = await blobData(randomBytes(1000), { public: wrong })
      const nowhere = await blobData(randomBytes(10), { public: 'not a reference' })
      const settled: Hash[] = []
      const f = fetcher(settled)
      f.start()
      await waitFor('both to settle', async () => settled.length === 2, { timeoutMs: 10_000, intervalMs: 20 })
      const verdictOf = (d: Data) => refs.verdict({ hash: d.blob!.hash, size: d.blob!.size, public: d.blob!.public! })
      expect(verdictOf(liar)).to.deep.include({ ok: false })
      expect((verdictOf(liar) as { reason: string }).reason).to.match(/does not match/)
      expect((verdictOf(nowhere) as { reason: string }).reason).to.match(/not a shared-storage reference/)
      expect(blobs.has(liar.blob!.hash)).to.equal(false)
      expect(data.blobsToFetch(), 'nothing left to fetch after a restart').to.deep.equal([])
      f.stop()
    })

    it('logs a blob it cannot fetch yet once per reason, and says when it was fetched after retrying', async () => {
      const bytes = randomBytes(100)
      const ref = await storage.upload(bytes)
      const d = await blobData(bytes, { public: ref })
      storage.failDownloads = 3
      const settled: Hash[] = []
      const lines: string[] = []
      const f = new BlobFetcher({ db, data, blobs, refs, blobStore: store, storage, log: (l) => lines.push(l), settled: (h) => settled.push(h) })
      const announced = { hash: d.blob!.hash, size: bytes.length, public: ref }
      f.want(announced)
      f.want(announced) // wanted already: one fetch
      await waitFor('the blob to settle', async () => settled.length > 0, { timeoutMs: 20_000, intervalMs: 20 })
      expect(lines).to.deep.equal([`blob ${d.blob!.hash}: cannot fetch ${ref} yet: storage unreachable; retrying`, `blob ${d.blob!.hash}: fetched from ${ref} after retrying`])
      expect(settled).to.deep.equal([d.blob!.hash])
      // Its verdict recorded: wanted again (a restart, another message), it is not fetched again.
      f.want(announced)
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(settled).to.have.length(1)
      await f.stop()
    })

    it('stops retrying at stop, and wants nothing more', async () => {
      const d = await blobData(randomBytes(10), { public: 'ref-nobody' })
      const settled: Hash[] = []
      const f = fetcher(settled)
      f.want({ hash: d.blob!.hash, size: 10, public: 'ref-nobody' })
      await new Promise((resolve) => setTimeout(resolve, 30))
      await f.stop()
      const ref = await storage.upload(randomBytes(10))
      f.want({ hash: d.blob!.hash, size: 10, public: ref })
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(settled).to.deep.equal([])
    })

    it('after a restart wants only blobs of pending messages whose key is a registered member\'s', async () => {
      const ofMember = await blobData(randomBytes(10), { public: 'ref-member' })
      const ofStranger = await blobData(randomBytes(10), { public: 'ref-stranger' }, '0x' + '0d'.repeat(20))
      const ofRejected = await blobData(randomBytes(10), { public: 'ref-rejected' })
      await db.transaction((tx) => repos.messages.reject(tx, messageOf.get(ofRejected.id)!, newId<BatchId>(), newId<TxId>(), now(), 'test'))
      // A peer's item, named by the digest of what its batch carried; a copy of it with another reference is not named.
      const received = await blobData(randomBytes(10), { public: 'ref-received' }, MEMBER_KEY, true)
      await db.transaction((tx) => data.insert(tx, withDigest({ ...asOwn(received), blob: { ...received.blob!, public: 'ref-copy' } }), false))
      expect(data.blobsToFetch().map((b) => b.public).sort()).to.deep.equal([ofMember.blob!.public, 'ref-received'])
      void ofStranger
    })
  })
})
