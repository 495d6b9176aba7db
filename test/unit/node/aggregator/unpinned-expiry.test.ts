import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { carriedAgain, makeBatch } from '../../../support/exchange-harness.js'
import { UnpinnedExpiry } from '../../../../node/aggregator/unpinned-expiry.js'
import { storeReceivedBatch } from '../../../../node/aggregator/store-batch.js'
import { RecentBatches } from '../../../../node/aggregator/recent-batches.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { BlobStore } from '../../../../node/data/blob-store.js'
import { newId, type DataId, type Hash } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import type { BatchPayload } from '../../../../node/model/index.js'

const HOUR = 3_600_000

describe('quotas: private batches delivered here and never pinned', () => {
  const temp = new TempDirs()
  let r: Repos
  let dir: string
  let store: BlobStore
  let clock: number
  let caughtUp: boolean
  let lines: string[]
  let passed: string[]
  let expiry: UnpinnedExpiry

  beforeEach(async () => {
    const root = await temp.make('parley-unpinned-expiry-')
    r = await openRepos(join(root, 'db'))
    dir = join(root, 'blobs')
    clock = Date.now()
    store = await BlobStore.open(dir, { now: () => clock })
    caughtUp = true
    lines = []
    passed = []
    expiry = new UnpinnedExpiry({
      db: r.db,
      repo: r.unpinnedBatches,
      pins: r.pins,
      messages: r.messages,
      data: r.data,
      blobs: r.blobs,
      received: r.receivedBlobs,
      blobStore: store,
      recent: new RecentBatches(),
      keepMs: 24 * HOUR,
      caughtUp: () => caughtUp,
      log: (l) => lines.push(l),
      passed: (id) => passed.push(id),
      now: () => clock,
    })
  })
  afterEach(() => r.db.close())
  after(() => temp.cleanup())

  const stored = (b: BatchPayload): Promise<unknown> => r.db.transaction((tx) => storeReceivedBatch(r, tx, b, sealManifest(b).manifest, ''))
  const pin = (b: BatchPayload): Promise<void> =>
    r.db.transaction((tx) => r.pins.insert(tx, { batchId: b.id, batchHash: b.hash, index: 0, hash: 'e'.repeat(64) as Hash, masked: true, signer: b.key, eventId: 'event-1' }))
  const held = (b: BatchPayload): boolean => r.batches.get(b.id) !== undefined

  it('deletes, after its time, a batch no pin named, with its pending messages and data; pinned or younger ones stay', async () => {
    const [lone, pinned] = [makeBatch('org0', 2), makeBatch('org0', 1)]
    await stored(lone)
    await stored(pinned)
    await pin(pinned)
    clock += 24 * HOUR - 60_000
    expect(await expiry.sweep(), 'not old enough').to.equal(0)
    clock += 2 * 60_000
    caughtUp = false
    expect(await expiry.sweep(), 'the chain not read through: a pin may be on its way').to.equal(0)
    caughtUp = true
    expect(await expiry.sweep()).to.equal(1)
    expect(held(lone)).to.equal(false)
    expect(r.messages.getMany(lone.messages.map((m) => m.header.id)).size).to.equal(0)
    expect(r.data.getMany(lone.data)).to.deep.equal([])
    expect(held(pinned)).to.equal(true)
    expect(r.messages.get(pinned.messages[0]!.header.id)?.state).to.equal('pending')
    expect(passed, 'both stop counting against the quota on such batches').to.have.members([lone.id, pinned.id])
    expect(lines.join('\n')).to.match(/deleted 1 batch\(es\) delivered here that no pin named .*\(quotas.unpinnedBatchMs\)/)

    // Delivered again later: taken as a batch never delivered; the cursor looks at it again in its turn.
    clock = Date.now()
    await stored(lone)
    expect(held(lone)).to.equal(true)
    expect(await expiry.sweep(), 'stored just now').to.equal(0)
    clock += 25 * HOUR
    expect(await expiry.sweep()).to.equal(1)
  })

  it('keeps a data item another message carries; deletes a blob only its data named (record, quota row, file)', async () => {
    const bytes = new TextEncoder().encode('a blob of the batch')
    const hash = createHash('sha256').update(bytes).digest('hex') as Hash
    await store.write((async function* () { yield bytes })())
    await r.db.transaction((tx) => {
      r.blobs.insert(tx, { hash, size: bytes.length, created: now() })
      r.receivedBlobs.insert(tx, { hash, org: 'org0', bytes: 65536, received: clock })
    })
    const lone = makeBatch('org0', 2)
    lone.data[0] = { ...lone.data[0]!, blob: { hash, size: bytes.length, name: '' } }
    const other = makeBatch('org0', 1)
    // It carries the item too, as a batch must carry every item its messages name: the same fields, the same row.
    other.messages[0] = { ...other.messages[0]!, data: [...other.messages[0]!.data, { id: lone.data[1]!.id, hash: lone.data[1]!.hash }] }
    other.data.push(lone.data[1]!)
    await stored(lone)
    await stored(other)
    await pin(other)
    clock += 25 * HOUR
    expect(await expiry.sweep()).to.equal(1)
    expect(r.data.get(lone.data[0]!.id)).to.equal(undefined)
    expect(r.data.get(lone.data[1]!.id), 'another message carries it').not.to.equal(undefined)
    expect(r.blobs.has(hash)).to.equal(false)
    expect(r.receivedBlobs.usageOf('org0')).to.equal(0)
    expect((await readdir(dir)).filter((f) => f !== 'tmp')).to.deep.equal([])
  })

  it('counts only its own key\'s pins: a squatter pinning its id, or another batch under its id, keeps nothing', async () => {
    const lone = makeBatch('org0', 2)
    await stored(lone)
    // Another signer's pin of the same id and hash, and a pin of the id with another hash by the batch's own key.
    await r.db.transaction((tx) => {
      r.pins.insert(tx, { batchId: lone.id, batchHash: lone.hash, index: 0, hash: 'e'.repeat(64) as Hash, masked: true, signer: '0x' + '5'.repeat(40), eventId: 'event-squat' })
      r.pins.insert(tx, { batchId: lone.id, batchHash: 'f'.repeat(64) as Hash, index: 0, hash: 'e'.repeat(64) as Hash, masked: true, signer: lone.key, eventId: 'event-other' })
    })
    clock += 25 * HOUR
    expect(await expiry.sweep()).to.equal(1)
    expect(held(lone)).to.equal(false)
    expect(r.messages.getMany(lone.messages.map((m) => m.header.id)).size).to.equal(0)
  })

  it('counts only its private pins: its author pinning it as a broadcast (naming a payload) keeps nothing', async () => {
    const lone = makeBatch('org0', 1)
    await stored(lone)
    await r.db.transaction((tx) => r.pins.insert(tx, { batchId: lone.id, batchHash: lone.hash, index: 0, hash: 'e'.repeat(64) as Hash, masked: false, signer: lone.key, eventId: 'event-broadcast' }))
    clock += 25 * HOUR
    expect(await expiry.sweep()).to.equal(1)
    expect(held(lone)).to.equal(false)
  })

  it('never deletes a batch whose messages are decided (an unpinned batch is, on arrival)', async () => {
    const b = makeBatch('org0', 2)
    await stored(b)
    await r.db.transaction((tx) => r.messages.confirmMany(tx, b.messages.map((m) => ({ id: m.header.id, hash: m.hash })), b.id, b.tx.id, now()))
    clock += 48 * HOUR
    expect(await expiry.sweep()).to.equal(0)
    expect(held(b)).to.equal(true)
  })

  it('keeps a pending message another batch of its author carries too, as that batch carried it', async () => {
    const lone = makeBatch('org0', 1)
    // The same message (id and hash) again in a pinned batch, carrying its data item with another validator.
    const pinned = carriedAgain(lone)
    await stored(lone)
    await stored(pinned)
    await pin(pinned)
    const m = lone.messages[0]!
    const before = r.messages.byRef(m.header.id, m.hash)!
    expect(before.batch, 'its row: the batch stored first').to.equal(lone.id)
    clock += 25 * HOUR
    expect(await expiry.sweep()).to.equal(1)
    expect(held(lone)).to.equal(false)
    const after = r.messages.byRef(m.header.id, m.hash)!
    expect(after.state).to.equal('pending')
    expect(after.batch).to.equal(pinned.id)
    expect(r.data.getMany(after.data).map((d) => d.validator), 'the data the pinned batch carried').to.deep.equal(['none'])
    expect(r.data.getMany(before.data), 'the copy only the deleted batch carried').to.deep.equal([])
    expect(r.messages.carried.ofBatch(pinned.id, pinned.hash).size, 'its row holds it now').to.equal(0)
  })
  const dataRows = (): number => Number(r.db.get<{ n: number }>('SELECT count(*) AS n FROM data')!.n)

  it('deleting a batch that only carried a message held pending from another batch deletes what it alone carried', async () => {
    const first = makeBatch('org0', 1)
    const lone = carriedAgain(first)
    await stored(first)
    await pin(first)
    await stored(lone)
    const before = dataRows()
    clock += 25 * HOUR
    expect(await expiry.sweep()).to.equal(1)
    expect(held(lone)).to.equal(false)
    expect(dataRows(), 'its copy of the item, with validator none').to.equal(before - 1)
    expect(r.data.getMany(r.messages.byRef(first.messages[0]!.header.id, first.messages[0]!.hash)!.data).map((d) => d.validator)).to.deep.equal(['json'])
  })

  it('a batch bringing a message decided already stores nothing of what it carried with it', async () => {
    const first = makeBatch('org0', 1)
    const late = carriedAgain(first)
    await stored(first)
    await r.db.transaction((tx) => r.messages.confirmMany(tx, first.messages.map((m) => ({ id: m.header.id, hash: m.hash })), first.id, first.tx.id, now()))
    const before = dataRows()
    await stored(late)
    expect(dataRows()).to.equal(before)
    clock += 25 * HOUR
    expect(await expiry.sweep(), 'the first is decided: kept; the late one deleted').to.equal(1)
    expect(dataRows()).to.equal(before)
  })

  it('a message another version of the batch (same id) lists too stays, as that version carried it', async () => {
    const both = makeBatch('org0', 2)
    // The other version: the first message alone, its item carried with another validator.
    const [m0] = both.messages
    const one = { ...both, messages: [m0!], data: [{ ...both.data[0]!, validator: 'none' }] }
    const twin = { ...one, hash: sealManifest(one).hash }
    await stored(both)
    await stored(twin)
    await pin(twin)
    const before = dataRows()
    clock += 25 * HOUR
    expect(await expiry.sweep(), 'the version no pin named').to.equal(1)
    const row = r.messages.byRef(m0!.header.id, m0!.hash)!
    expect([row.state, row.batch]).to.deep.equal(['pending', both.id])
    expect(r.data.getMany(row.data).map((d) => d.validator), 'what the pinned version carried').to.deep.equal(['none'])
    expect(r.messages.carried.ofBatch(twin.id, twin.hash).size, 'its row holds it now').to.equal(0)
    expect(dataRows(), 'the other message and the copy only the deleted version carried are gone').to.equal(before - 2)
  })

  it('never deletes this member\'s own item (nor its blob) for a reference without a digest in the batch it deletes', async () => {
    const bytes = new TextEncoder().encode('a blob of this member')
    const hash = createHash('sha256').update(bytes).digest('hex') as Hash
    await store.write((async function* () { yield bytes })())
    const own = { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: 'd'.repeat(64) as Hash, created: now(), value: '{}', blob: { hash, size: bytes.length, name: '' } }
    const lone = makeBatch('org0', 1)
    await stored(lone)
    await r.db.transaction((tx) => {
      r.blobs.insert(tx, { hash, size: bytes.length, created: now() })
      r.data.insert(tx, own, true)
      // A reference without a digest names this member's own item of that id and hash, whatever batch lists it.
      tx.run('UPDATE messages SET data = ? WHERE id = ?', [JSON.stringify([{ id: own.id, hash: own.hash }]), lone.messages[0]!.header.id])
    })
    clock += 25 * HOUR
    expect(await expiry.sweep()).to.equal(1)
    expect(held(lone)).to.equal(false)
    expect(r.data.byRef({ id: own.id, hash: own.hash }), 'its own item').not.to.equal(undefined)
    expect(r.blobs.has(hash), 'its blob').to.equal(true)
    expect((await readdir(dir)).filter((f) => f !== 'tmp').length, 'its file').to.equal(1)
  })
})
