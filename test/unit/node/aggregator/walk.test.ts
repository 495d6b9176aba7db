import { expect } from 'chai'
import { receivedRecord } from '../../../../node/aggregator/store-batch.js'
import { StandingQueues } from '../../../../node/aggregator/standing.js'
import { WalkPosition } from '../../../../node/aggregator/walk.js'
import { sealManifest } from '../../../../node/batch/verify.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { forEachEngine, openRepos, type Repos } from '../../../support/repos.js'
import { makeReceivedBatch, pinReceivedBatch } from '../../../support/received-batch.js'

/** WalkPosition: the pages a walk takes, and its queues after a pass over one failed. */
forEachEngine('aggregator: the walk’s position', (engine) => {
  const dirs = new TempDirs()
  let repos: Repos
  let queues: StandingQueues
  let walk: WalkPosition

  beforeEach(async () => {
    repos = await openRepos(await dirs.make(), engine)
    queues = new StandingQueues(() => 0)
    walk = new WalkPosition(repos.pins, queues)
    walk.start()
  })
  afterEach(async () => {
    await repos.db.close()
    await dirs.cleanup()
  })

  /** A batch held here whose pins (one per topic list) are on chain, waiting. */
  async function heldBatch(topicLists: string[][]): Promise<void> {
    const { payload } = makeReceivedBatch(topicLists)
    await repos.db.transaction((tx) => repos.batches.insert(tx, receivedRecord(payload, sealManifest(payload).manifest, `Qm${payload.id}`)))
    await pinReceivedBatch(repos, payload)
  }

  it('walks a page again after a pass over it failed, with the queues read again first', async () => {
    await heldBatch([['t1'], ['t2']])
    await heldBatch([['t3']])
    walk.readQueuesIfStale()
    const page = walk.nextPage()!
    expect(page.map((p) => p.index)).to.deep.equal([0, 1, 0])
    expect(walk.nextPage(), 'claimed').to.equal(undefined)
    // What the pass took off the queues before its transaction failed.
    for (const p of page) queues.leave(p)
    walk.failedPage(page)
    expect(walk.queuesKnown).to.equal(false)
    expect(walk.nextPage()!.map((p) => p.seq)).to.deep.equal(page.map((p) => p.seq))
    walk.readQueuesIfStale()
    expect(walk.queuesKnown).to.equal(true)
    expect(queues.size).to.equal(3)
  })

  it('keeps the queues stale while reading them fails, and reads them at the next call', async () => {
    await heldBatch([['t1']])
    const page = walk.nextPage()!
    for (const p of page) queues.leave(p)
    walk.failedPage(page)
    const { pins } = repos
    const waitingBroadcast = pins.waitingBroadcast.bind(pins)
    pins.waitingBroadcast = () => {
      throw new Error('the database is unavailable')
    }
    expect(() => walk.readQueuesIfStale()).to.throw(/unavailable/)
    pins.waitingBroadcast = waitingBroadcast
    expect(walk.queuesKnown).to.equal(false)
    expect(queues.size).to.equal(0)
    walk.readQueuesIfStale()
    expect(walk.queuesKnown).to.equal(true)
    expect(queues.size).to.equal(1)
  })
})
