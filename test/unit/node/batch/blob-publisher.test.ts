import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { MemoryStorage } from '../../../support/storage.js'
import { chunksOf } from '../../../support/streams.js'
import { BlobPublisher } from '../../../../node/batch/blob-publisher.js'
import { BlobStore } from '../../../../node/data/blob-store.js'
import { OperationRecorder } from '../../../../node/operations/recorder.js'
import { dataHash } from '../../../../node/core/hashes.js'
import { newId, type DataId, type Hash, type TxId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import type { Data } from '../../../../node/model/index.js'

/** Blobs published on the first broadcast that carries them: a real database and blob store, storage in memory. */
describe('batch: blob publisher', () => {
  const temp = new TempDirs()
  let r: Repos
  let blobStore: BlobStore
  let storage: MemoryStorage
  let publisher: BlobPublisher

  beforeEach(async () => {
    const dir = await temp.make('parley-blob-publisher-')
    r = await openRepos(join(dir, 'db'))
    blobStore = await BlobStore.open(join(dir, 'blobs'))
    storage = new MemoryStorage()
    publisher = new BlobPublisher({ db: r.db, data: r.data, refs: r.refs, blobStore, storage, operationRecorder: new OperationRecorder({ operations: r.operations, identities: r.identities }) })
  })
  afterEach(async () => {
    await r.db.close()
    await temp.cleanup()
  })

  async function withBlob(bytes: Buffer): Promise<Data> {
    const stored = await blobStore.write(chunksOf(bytes))
    const d: Data = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ blobHash: stored.hash }), created: now(), value: null, blob: { hash: stored.hash, size: stored.size, name: 'f' } }
    await r.db.transaction((tx) => r.data.insert(tx, d, true))
    return d
  }

  it('uploads a blob once for the data items that carry it, records every reference, and one upload operation of the batch', async () => {
    const a = await withBlob(Buffer.from('same blob'))
    const b = { ...a, id: newId<DataId>() }
    await r.db.transaction((tx) => r.data.insert(tx, b, true))
    const txId = newId<TxId>()
    expect(await publisher.publishAll([a, b], { namespace: 'default', txId })).to.equal(true)
    expect(storage.uploaded).to.have.length(1)
    const ref = storage.uploaded[0]!.ref
    expect([r.data.get(a.id)!.blob!.public, r.data.get(b.id)!.blob!.public]).to.deep.equal([ref, ref])
    const ops = r.operations.list('default', { limit: 10, skip: 0 })
    expect(ops.map((o) => [o.type, o.status, o.tx, o.input, o.output])).to.deep.equal([['sharedstorage_upload_blob', 'Succeeded', txId, { dataId: a.id }, { payloadRef: ref }]])
  })

  it('a blob already published is not uploaded again, and no operation is recorded for it', async () => {
    const a = await withBlob(Buffer.from('published before'))
    await publisher.publishAll([a], { namespace: 'default', txId: newId<TxId>() })
    const again = { ...a, id: newId<DataId>() }
    await r.db.transaction((tx) => r.data.insert(tx, again, true))
    await publisher.publishAll([again], { namespace: 'default', txId: newId<TxId>() })
    expect(storage.uploaded).to.have.length(1)
    expect(r.operations.list('default', { limit: 10, skip: 0 })).to.have.length(1)
  })

  it('refuses to publish a blob this node does not hold, uploading nothing and announcing no reference', async () => {
    const held = await withBlob(Buffer.from('held here'))
    const missing = 'c'.repeat(64) as Hash
    const absent: Data = { ...held, id: newId<DataId>(), hash: dataHash({ blobHash: missing }), blob: { hash: missing, size: 4, name: 'g' } }
    await r.db.transaction((tx) => r.data.insert(tx, absent, true))
    const err = await publisher.publishAll([absent], { namespace: 'default', txId: newId<TxId>() }).then(() => undefined, (e: unknown) => e)
    expect((err as Error).message).to.equal(`blob ${missing} of data ${absent.id} is not held by this node, so it cannot be published`)
    expect(storage.uploaded).to.deep.equal([])
    expect(r.data.get(absent.id)!.blob!.public).to.equal(undefined)
    expect(r.operations.list('default', { limit: 10, skip: 0 })).to.deep.equal([])
  })
})
