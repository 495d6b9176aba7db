import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { BlobStore } from '../../../../node/data/blob-store.js'
import { BlobReceiver } from '../../../../node/data/blob-receiver.js'
import { MIN_BLOB_CHARGE_BYTES, UnreferencedBlobs } from '../../../../node/data/unreferenced-blobs.js'
import { isParleyError } from '../../../../node/core/errors.js'
import type { Hash } from '../../../../node/core/ids.js'
import type { Peer } from '../../../../node/exchange/index.js'

const peer1: Peer = { node: 'did:firefly:node/node1', org: 'org1', endpoint: 'https://127.0.0.1:1', cert: '' }
const sha = (b: Uint8Array): Hash => createHash('sha256').update(b).digest('hex') as Hash

/** The body as the exchange hands it: chunks, read once; `reads` counts how many chunks were taken. */
function body(bytes: Uint8Array, chunk = 4): { content: AsyncIterable<Uint8Array>; reads: () => number } {
  let n = 0
  return {
    content: (async function* () {
      for (let i = 0; i < bytes.length; i += chunk) {
        n++
        yield bytes.subarray(i, i + chunk)
      }
    })(),
    reads: () => n,
  }
}

describe('private blobs: the exchange blob handler', () => {
  const temp = new TempDirs()
  let r: Repos
  let dir: string
  let store: BlobStore
  let stored: Hash[]
  let receiver: BlobReceiver
  const bytes = new TextEncoder().encode('a private blob, some bytes long')
  const ref = { hash: sha(bytes), size: bytes.length }

  beforeEach(async () => {
    const root = await temp.make('parley-blob-receiver-')
    r = await openRepos(join(root, 'db'))
    dir = join(root, 'blobs')
    store = await BlobStore.open(dir)
    stored = []
    const quota = new UnreferencedBlobs({ db: r.db, blobs: r.blobs, received: r.receivedBlobs, blobStore: store, limitBytes: 2 * MIN_BLOB_CHARGE_BYTES, keepMs: 60_000, log: () => {} })
    receiver = new BlobReceiver({ db: r.db, blobs: r.blobs, blobStore: store, quota, registered: (n) => n === peer1.node || n === 'did:firefly:node/node2', stored: (h) => void stored.push(h), log: () => {} })
  })
  afterEach(() => r.db.close())
  after(() => temp.cleanup())

  const files = async (): Promise<string[]> => (await readdir(dir)).filter((f) => f !== 'tmp').concat((await readdir(join(dir, 'tmp'))).map((f) => `tmp/${f}`))

  it('stores the announced blob, records it as held (durably, before resolving) and wakes the aggregator', async () => {
    await receiver.handle(peer1, ref, body(bytes).content)
    expect(r.blobs.has(ref.hash)).to.equal(true)
    expect(stored).to.deep.equal([ref.hash])
    expect(await files()).to.deep.equal([ref.hash])
    const back = await store.read(ref.hash)
    const chunks: Uint8Array[] = []
    for await (const c of back!.stream) chunks.push(c as Uint8Array)
    expect(sha(Buffer.concat(chunks))).to.equal(ref.hash)
  })

  it('refuses a blob whose hash or size is not the announced one (BAD_PEER_DATA) and keeps nothing of it', async () => {
    const other = new TextEncoder().encode('a private blob, some bytes lonG')
    const cases = [
      { name: 'other content, same size', ref, content: other },
      { name: 'shorter', ref, content: bytes.subarray(0, 10) },
      { name: 'longer', ref, content: Buffer.concat([bytes, bytes]) },
      { name: 'size announced wrong', ref: { hash: ref.hash, size: ref.size + 1 }, content: bytes },
    ]
    for (const c of cases) {
      const err = await receiver.handle(peer1, c.ref, body(c.content).content).then(() => undefined, (e: unknown) => e)
      expect(isParleyError(err, 'BAD_PEER_DATA'), `${c.name}: ${String(err)}`).to.equal(true)
      expect(r.blobs.has(ref.hash), c.name).to.equal(false)
      expect(await files(), c.name).to.deep.equal([])
    }
    expect(stored).to.deep.equal([])
  })

  it('is idempotent: a blob already held is read through and resolves, without a second record or write', async () => {
    await receiver.handle(peer1, ref, body(bytes).content)
    const again = body(bytes)
    await receiver.handle(peer1, ref, again.content)
    expect(again.reads()).to.equal(Math.ceil(bytes.length / 4))
    expect(stored).to.deep.equal([ref.hash])
    expect(await files()).to.deep.equal([ref.hash])
  })

  it("refuses a blob past its org's quota of unreferenced blobs (STORAGE_FULL, naming it) before reading a byte of it", async () => {
    const blobs = ['one', 'two', 'three'].map((t) => new TextEncoder().encode(`blob ${t}`))
    for (const b of blobs.slice(0, 2)) await receiver.handle(peer1, { hash: sha(b), size: b.length }, body(b).content)
    const third = body(blobs[2]!)
    const err = await receiver.handle(peer1, { hash: sha(blobs[2]!), size: blobs[2]!.length }, third.content).then(() => undefined, (e: unknown) => e)
    expect(isParleyError(err, 'STORAGE_FULL'), String(err)).to.equal(true)
    expect((err as Error).message).to.contain('quotas.unreferencedBlobBytesPerOrg').and.contain('org org1')
    expect(third.reads()).to.equal(0)
    expect(r.blobs.has(sha(blobs[2]!))).to.equal(false)
    expect(r.receivedBlobs.usageOf('org1')).to.equal(2 * MIN_BLOB_CHARGE_BYTES)
    // Another org has a quota of its own.
    await receiver.handle({ ...peer1, node: 'did:firefly:node/node2', org: 'org2' }, { hash: sha(blobs[2]!), size: blobs[2]!.length }, body(blobs[2]!).content)
    expect(r.blobs.has(sha(blobs[2]!))).to.equal(true)
  })

  it('refuses, for now (retried), a node not registered here', async () => {
    const err = await receiver.handle({ ...peer1, node: 'did:firefly:node/node9' }, ref, body(bytes).content).then(() => undefined, (e: unknown) => e)
    expect(isParleyError(err, 'UNAVAILABLE')).to.equal(true)
    expect(r.blobs.has(ref.hash)).to.equal(false)
  })

  it('the blob store serves a held blob as re-iterable content (a fresh read per iteration), as the exchange needs', async () => {
    await receiver.handle(peer1, ref, body(bytes).content)
    const c = store.content(ref.hash)
    for (let i = 0; i < 2; i++) {
      const chunks: Uint8Array[] = []
      for await (const x of c) chunks.push(x)
      expect(sha(Buffer.concat(chunks))).to.equal(ref.hash)
    }
    const missing = await (async () => {
      for await (const _ of store.content('c'.repeat(64) as Hash)) void _
    })().then(() => undefined, (e: unknown) => e)
    expect(isParleyError(missing, 'NOT_FOUND')).to.equal(true)
  })
})
