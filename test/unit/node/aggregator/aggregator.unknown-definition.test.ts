import { expect } from 'chai'
import { join } from 'node:path'
import { serializeBatch } from '../../../../node/batch/payload.js'
import type { BatchPayload } from '../../../../node/model/index.js'
import { TempDirs } from '../../../support/db/helpers.js'
import { MemoryStorage } from '../../../support/storage.js'
import { AggregatorMember, broadcastBatch, pinLogOf, registeredOrgs } from '../../../support/aggregator-member.js'

/**
 * A definition nobody here handles (a tag of a later build, or none) is rejected as a message, naming its tag: its pin is
 * consumed and its topic moves on, so the next message on it is confirmed.
 */
describe('aggregator: a definition with no handler', () => {
  const temp = new TempDirs()
  const [org0, org1] = registeredOrgs(2)
  let storage: MemoryStorage
  let m: AggregatorMember

  beforeEach(async () => {
    storage = new MemoryStorage()
    m = await AggregatorMember.open(join(await temp.make('parley-unknown-definition-'), 'db'), storage, org1!)
    await m.register([org0!, org1!])
  })
  afterEach(() => m.close())
  after(() => temp.cleanup())

  async function received(payload: BatchPayload): Promise<string> {
    const ref = await storage.upload(new TextEncoder().encode(serializeBatch(payload)))
    await m.chain([pinLogOf({ payload, ref })])
    return payload.messages[0]!.header.id
  }

  it('rejects it naming its tag, or saying it has none, and confirms the next message on its topic', async () => {
    const tagged = await received(broadcastBatch('org0', org0!.key, [['defs']], { header: { type: 'definition', tag: 'svc_from_the_future' } }))
    const untagged = await received(broadcastBatch('org0', org0!.key, [['defs']], { header: { type: 'definition' } }))
    const next = await received(broadcastBatch('org0', org0!.key, [['defs']]))
    expect([m.state(tagged), m.r.messages.get(tagged)!.rejectReason]).to.deep.equal(['rejected', 'no definition handler for tag svc_from_the_future'])
    expect([m.state(untagged), m.r.messages.get(untagged)!.rejectReason]).to.deep.equal(['rejected', 'no definition handler for tag (none)'])
    expect(m.confirmed()).to.deep.equal([next])
  })
})
