import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { carriedAgain, makeBatch } from '../../../support/exchange-harness.js'
import { storeReceivedBatch } from '../../../../node/aggregator/store-batch.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import type { BatchPayload } from '../../../../node/model/index.js'

/** A stored batch notes whether it recorded what it carried with messages held from another batch (schema v21). */
describe('storing a received batch: its carried records', () => {
  const temp = new TempDirs()
  let r: Repos
  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-store-batch-'), 'db'))
  })
  afterEach(() => r.db.close())
  after(() => temp.cleanup())

  const stored = (b: BatchPayload): Promise<unknown> => r.db.transaction((tx) => storeReceivedBatch(r, tx, b, sealManifest(b).manifest, ''))

  it('marks only a batch that brought a message held pending from another batch, and records what it carried', async () => {
    const first = makeBatch('org0', 1)
    const second = carriedAgain(first)
    expect(await stored(first), 'all new').to.equal(undefined)
    await stored(second)
    expect(r.batches.byIdHash(first.id, first.hash)!.carried).to.equal(undefined)
    expect(r.batches.byIdHash(second.id, second.hash)!.carried).to.equal(true)
    expect([...r.messages.carried.ofBatch(second.id, second.hash).keys()]).to.deep.equal([first.messages[0]!.header.id])
  })
})
