import { join } from 'node:path'
import { expect } from 'chai'
import { storeReceivedBatch } from '../../../../../node/aggregator/store-batch.js'
import { sealManifest } from '../../../../../node/batch/verify.js'
import type { Hash } from '../../../../../node/core/ids.js'
import type { BatchPayload } from '../../../../../node/model/index.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { makeBatch } from '../../../../support/exchange-harness.js'
import { forEachEngine, openRepos, type Repos } from '../../../../support/repos.js'

/**
 * What the quota on never-pinned private batches counts at start (`charges`): each peer batch to be pinned that no
 * private pin of its key names and the expiry has not passed, with its manifest's and data values' UTF-8 bytes.
 */
forEachEngine('db: private batches no pin names yet, as the quota counts them', function (engine) {
  const temp = new TempDirs()
  let r: Repos
  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-unpinned-charges-'), 'db'), engine)
  })
  afterEach(() => r.db.close())
  after(() => temp.cleanup())

  const store = (b: BatchPayload) => r.db.transaction((tx) => storeReceivedBatch(r, tx, b, sealManifest(b).manifest, ''))
  const pin = (b: BatchPayload, signer: string, masked = true) =>
    r.db.transaction((tx) => r.pins.insert(tx, { batchId: b.id, batchHash: b.hash, index: 0, hash: 'e'.repeat(64) as Hash, masked, signer, eventId: `ev-${b.id}-${signer}` }))
  const bytesOf = (b: BatchPayload) => Buffer.byteLength(sealManifest(b).manifest) + b.data.reduce((n, d) => n + Buffer.byteLength(d.value ?? ''), 0)

  it('counts the batches no private pin of their key names, at their stored bytes; not pinned, unpinned or passed ones', async () => {
    const [lone, squatted, broadcastPinned, pinned, unpinned, passed] = [
      makeBatch('org1', 3, { text: 'déjà vu €' }),
      makeBatch('org1', 1),
      makeBatch('org2', 2),
      makeBatch('org1', 1),
      makeBatch('org1', 1, { unpinned: true }),
      makeBatch('org2', 1),
    ]
    for (const b of [passed, lone, squatted, broadcastPinned, pinned, unpinned]) await store(b)
    await pin(squatted, '0x' + '99'.repeat(20))
    await pin(broadcastPinned, broadcastPinned.key, false)
    await pin(pinned, pinned.key)
    // The expiry passed the first batch stored (kept or deleted it): it no longer counts.
    const first = r.unpinnedBatches.deliveredAfter(0, 1)[0]!
    await r.db.transaction((tx) => r.unpinnedBatches.setCursor(tx, first.seq))

    const charges = r.unpinnedBatches.charges().sort((a, b) => a.bytes - b.bytes)
    const expected = [lone, squatted, broadcastPinned].map((b) => ({ id: b.id, hash: b.hash, key: b.key, author: b.author, bytes: bytesOf(b) })).sort((a, b) => a.bytes - b.bytes)
    expect(charges).to.deep.equal(expected)
    // Non-ASCII values count in UTF-8 bytes, as on delivery.
    expect(bytesOf(lone)).to.be.greaterThan(sealManifest(lone).manifest.length + lone.data.reduce((n, d) => n + d.value!.length, 0))
  })
})
