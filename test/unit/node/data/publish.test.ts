import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { MemoryStorage } from '../../../support/storage.js'
import { chunksOf } from '../../../support/streams.js'
import { BlobStore } from '../../../../node/data/blob-store.js'
import { DataPublisher } from '../../../../node/data/publish.js'
import { dataHash } from '../../../../node/core/hashes.js'
import { isParleyError } from '../../../../node/core/errors.js'
import { newId, type DataId, type Hash } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import type { Data } from '../../../../node/model/index.js'
import { rejectionOf } from '../../../support/wait.js'

/** Publishing a data item's value or blob: a real database and blob store, shared storage in memory. */
describe('data: publish to shared storage', () => {
  const temp = new TempDirs()
  let r: Repos
  let blobStore: BlobStore
  let storage: MemoryStorage
  let publisher: DataPublisher

  beforeEach(async () => {
    const dir = await temp.make('parley-publish-')
    r = await openRepos(join(dir, 'db'))
    blobStore = await BlobStore.open(join(dir, 'blobs'))
    storage = new MemoryStorage()
    publisher = new DataPublisher({ db: r.db, data: r.data, refs: r.refs, blobs: r.blobs, transactions: r.transactions, operations: r.operations, blobStore, storage })
  })
  afterEach(async () => {
    await r.db.close()
    await temp.cleanup()
  })

  async function valueData(value = '{"a":1}', namespace = 'default'): Promise<Data> {
    const d: Data = { id: newId<DataId>(), validator: 'json', namespace, hash: dataHash({ valueRaw: value }), created: now(), value }
    await r.db.transaction((tx) => r.data.insert(tx, d, true))
    return d
  }

  async function blobData(bytes: Buffer): Promise<Data> {
    const stored = await blobStore.write(chunksOf(bytes))
    const d: Data = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ blobHash: stored.hash }), created: now(), value: null, blob: { hash: stored.hash, size: stored.size, name: 'file.bin' } }
    await r.db.transaction((tx) => {
      r.blobs.insert(tx, { hash: stored.hash, size: stored.size, created: now() })
      r.data.insert(tx, d, true)
    })
    return d
  }

  const refusal = rejectionOf

  it("publishes the value's exact text and records it as the data's public reference, in a data_publish transaction", async () => {
    const d = await valueData('{"b":[1,2]}')
    const out = await publisher.publishValue('default', d.id)
    expect(storage.uploaded.map((u) => u.bytes.toString())).to.deep.equal(['{"b":[1,2]}'])
    expect(out.public).to.equal(storage.uploaded[0]!.ref)
    expect(r.data.get(d.id)!.public).to.equal(out.public)
    const [t] = r.transactions.list('default', { limit: 10, skip: 0 })
    expect(t).to.deep.include({ type: 'data_publish', namespace: 'default', blockchainIds: [] })
    const [op] = r.operations.list('default', { limit: 10, skip: 0 })
    expect(op).to.deep.include({ type: 'sharedstorage_upload_value', status: 'Succeeded', plugin: 'ipfs', tx: t!.id, input: { dataId: d.id }, output: { payloadRef: out.public } })
  })

  it('publishes a blob from the blob store and records its reference as verified, so a broadcast does not upload it again', async () => {
    const bytes = Buffer.alloc(200_000, 7)
    const d = await blobData(bytes)
    const out = await publisher.publishBlob('default', d.id)
    expect(storage.uploaded).to.have.length(1)
    expect(storage.uploaded[0]!.bytes.equals(bytes)).to.equal(true)
    expect(storage.uploaded[0]!.name, 'named by its hash').to.equal(d.blob!.hash)
    expect(out.blob!.public).to.equal(storage.uploaded[0]!.ref)
    expect(r.refs.verifiedPublic(d.blob!.hash, d.blob!.size)).to.equal(out.blob!.public)
    expect(r.operations.list('default', { limit: 10, skip: 0 })[0]).to.deep.include({ type: 'sharedstorage_upload_blob', status: 'Succeeded' })
  })

  it('a failed upload leaves a Failed operation with its error and no reference; the caller gets a 503-class error', async () => {
    const d = await valueData()
    storage.failNext(1)
    const err = await refusal(publisher.publishValue('default', d.id))
    expect(isParleyError(err, 'UNAVAILABLE')).to.equal(true)
    expect(r.data.get(d.id)!.public).to.equal(undefined)
    expect(r.operations.list('default', { limit: 10, skip: 0 })[0]).to.deep.include({ status: 'Failed', error: 'storage unreachable' })
  })

  it('an idempotency key names one publish: a second with the same key is a conflict, another namespace may reuse it', async () => {
    const d = await valueData()
    await publisher.publishValue('default', d.id, 'key-1')
    expect(isParleyError(await refusal(publisher.publishValue('default', d.id, 'key-1')), 'CONFLICT')).to.equal(true)
    const other = await valueData('{"c":3}', 'ns1')
    await publisher.publishValue('ns1', other.id, 'key-1')
    expect(storage.uploaded).to.have.length(2)
  })

  it('refuses what cannot be published: unknown data, data of another namespace, no value, no blob, a blob not held', async () => {
    const d = await valueData()
    expect(isParleyError(await refusal(publisher.publishValue('default', newId<DataId>())), 'NOT_FOUND')).to.equal(true)
    expect(isParleyError(await refusal(publisher.publishValue('ns1', d.id)), 'NOT_FOUND')).to.equal(true)
    expect(isParleyError(await refusal(publisher.publishBlob('default', d.id)), 'INVALID_FIELD')).to.equal(true)
    const noValue = await blobData(Buffer.from('x'))
    expect(isParleyError(await refusal(publisher.publishValue('default', noValue.id)), 'INVALID_FIELD')).to.equal(true)
    const missing: Data = { ...noValue, id: newId<DataId>(), blob: { hash: 'ab'.repeat(32) as Hash, size: 1, name: '' } }
    await r.db.transaction((tx) => r.data.insert(tx, missing, true))
    expect(isParleyError(await refusal(publisher.publishBlob('default', missing.id)), 'NOT_FOUND')).to.equal(true)
    // A peer's data item (received, not this member's own) is not this member's to publish.
    const peers: Data = { ...d, id: newId<DataId>() }
    await r.db.transaction((tx) => r.data.insert(tx, peers, false))
    expect(isParleyError(await refusal(publisher.publishValue('default', peers.id)), 'NOT_FOUND')).to.equal(true)
    expect(storage.attempts, 'nothing was uploaded').to.equal(0)
    expect(r.transactions.list('default', { limit: 10, skip: 0 }), 'nor any transaction recorded').to.deep.equal([])
  })
})
