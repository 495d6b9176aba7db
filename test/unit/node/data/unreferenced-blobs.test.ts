import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { BlobStore, LANDING_GRACE_MS } from '../../../../node/data/blob-store.js'
import { MIN_BLOB_CHARGE_BYTES, UnreferencedBlobs } from '../../../../node/data/unreferenced-blobs.js'
import { isParleyError } from '../../../../node/core/errors.js'
import { newId, type DataId, type Hash } from '../../../../node/core/ids.js'
import { now as timestamp } from '../../../../node/core/time.js'

const sha = (b: Uint8Array): Hash => createHash('sha256').update(b).digest('hex') as Hash
const HOUR = 3_600_000

describe('quotas: blobs peers sent that no message refers to', () => {
  const temp = new TempDirs()
  let r: Repos
  let dir: string
  let store: BlobStore
  let clock: number
  let lines: string[]
  let quota: UnreferencedBlobs

  beforeEach(async () => {
    const root = await temp.make('parley-unreferenced-')
    r = await openRepos(join(root, 'db'))
    dir = join(root, 'blobs')
    clock = 1_000_000_000_000
    store = await BlobStore.open(dir, { now: () => clock })
    lines = []
    quota = new UnreferencedBlobs({ db: r.db, blobs: r.blobs, received: r.receivedBlobs, blobStore: store, limitBytes: 3 * MIN_BLOB_CHARGE_BYTES, keepMs: 24 * HOUR, log: (l) => lines.push(l), now: () => clock })
  })
  afterEach(() => r.db.close())
  after(() => temp.cleanup())

  /** Receives a blob of `org` as the blob receiver does; answers its hash. */
  async function receive(org: string, text: string): Promise<Hash> {
    const bytes = new TextEncoder().encode(text)
    const share = quota.reserve(org, bytes.length)
    try {
      const stored = await store.write((async function* () { yield bytes })(), { expect: { hash: sha(bytes), size: bytes.length } })
      await r.db.transaction((tx) => {
        r.blobs.insert(tx, { hash: stored.hash, size: stored.size, created: timestamp() })
        share.record(tx, stored.hash)
      })
      share.stored()
      return stored.hash
    } finally {
      share.release()
    }
  }

  const refer = (hash: Hash): Promise<void> =>
    r.db.transaction((tx) => r.data.insert(tx, { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: 'd'.repeat(64) as Hash, created: timestamp(), value: null, blob: { hash, size: 1, name: '' } }, true))
  const files = async (): Promise<string[]> => (await readdir(dir)).filter((f) => f !== 'tmp').sort()

  it('counts each blob at its size or the minimum, per org, and refuses past the quota with STORAGE_FULL naming it', async () => {
    await receive('org1', 'a')
    await receive('org1', 'b')
    const held = quota.reserve('org1', 10) // being received: counts already
    const err = (() => {
      try {
        quota.reserve('org1', 10)
      } catch (e) {
        return e
      }
    })()
    expect(isParleyError(err, 'STORAGE_FULL'), String(err)).to.equal(true)
    expect((err as Error).message).to.match(/org org1 already has 196608 bytes here in blobs that no message refers to/).and.contain('quotas.unreferencedBlobBytesPerOrg').and.contain('24 h (quotas.unreferencedBlobMs)')
    const brief = new UnreferencedBlobs({ db: r.db, blobs: r.blobs, received: r.receivedBlobs, blobStore: store, limitBytes: 1, keepMs: 120_000, log: () => {} })
    expect(() => brief.reserve('org1', 10), 'its time, readably').to.throw(/deleted after 2 min \(quotas.unreferencedBlobMs\)/)
    expect(() => quota.reserve('org2', 3 * MIN_BLOB_CHARGE_BYTES).release(), 'another org').not.to.throw()
    held.release()
    expect(quota.usedBy('org1')).to.equal(2 * MIN_BLOB_CHARGE_BYTES)
    const big = quota.reserve('org1', MIN_BLOB_CHARGE_BYTES)
    expect(() => quota.reserve('org1', 1)).to.throw(/quotas.unreferencedBlobBytesPerOrg/)
    big.release()
  })

  it('a blob a stored data item refers to stops counting: the next blob of its org is taken', async () => {
    const a = await receive('org1', 'a')
    await receive('org1', 'b')
    await receive('org1', 'c')
    expect(() => quota.reserve('org1', 1)).to.throw(/STORAGE_FULL|quotas/)
    await refer(a)
    await receive('org1', 'd')
    expect(quota.usedBy('org1')).to.equal(3 * MIN_BLOB_CHARGE_BYTES)
  })

  it('the sweep deletes, after their time (an injected clock), the unreferenced blobs: record, file and count; referenced ones stay', async () => {
    const a = await receive('org1', 'a')
    clock += 2 * HOUR
    const b = await receive('org1', 'b')
    const c = await receive('org2', 'c')
    await refer(c)
    clock += 22 * HOUR + 1 // a is 24 h old and a bit; b 22 h
    clock += LANDING_GRACE_MS // (the writes' grace is long past too)
    expect(await quota.sweep()).to.equal(1)
    expect(r.blobs.has(a)).to.equal(false)
    expect(r.blobs.has(b)).to.equal(true)
    expect(await files()).to.deep.equal([b, c].sort())
    expect(quota.usedBy('org1')).to.equal(MIN_BLOB_CHARGE_BYTES)
    expect(lines.join('\n')).to.match(/deleted 1 blob\(s\) peers sent .* \(quotas.unreferencedBlobMs\)/)

    clock += 3 * HOUR
    expect(await quota.sweep()).to.equal(1)
    expect(await files()).to.deep.equal([c])
    expect(r.blobs.has(c), 'a message refers to it: never expires').to.equal(true)
    expect(r.receivedBlobs.usageByOrg()).to.deep.equal(new Map())
  })

  it('a file a write put in place within the grace is kept by the sweep, its record gone; a later sweep removes it', async () => {
    const a = await receive('org1', 'a')
    clock += 24 * HOUR + 1
    // The same content written again just now (an upload whose record is still to come).
    const bytes = new TextEncoder().encode('a')
    await store.write((async function* () { yield bytes })())
    expect(await quota.sweep()).to.equal(1)
    expect(r.blobs.has(a)).to.equal(false)
    expect(await files()).to.deep.equal([a])
    clock += LANDING_GRACE_MS
    expect(await store.removeDiscarded((h) => r.blobs.has(h))).to.equal(1)
    expect(await files()).to.deep.equal([])
  })
})
