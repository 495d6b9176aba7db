import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { pinIngest } from '../../../../node/aggregator/pin-ingest.js'
import { newId, type Address, type BatchId, type Hash, type TxId } from '../../../../node/core/ids.js'
import { BATCH_PIN_ACTION, BATCH_PIN_EVENT_TOPIC, SYSTEM_NAMESPACE, type BatchPinEvent, type NodeEvent, type PinnedBatch } from '../../../../node/model/index.js'

const hex = (byte: string): Hash => byte.repeat(32) as Hash

let block = 100
/** A BatchPin log at its own chain position; a broadcast pin unless told otherwise. */
function log(over: Partial<BatchPinEvent> = {}): BatchPinEvent {
  const n = block++
  return {
    blockNumber: n,
    txIndex: 0,
    logIndex: 0,
    protocolId: `${String(n).padStart(12, '0')}/000000/000000`,
    txHash: '0x' + n.toString(16).padStart(64, '0'),
    author: ('0x' + 'aa'.repeat(20)) as Address,
    timestamp: 1_700_000_000 + n,
    action: BATCH_PIN_ACTION,
    txId: newId<TxId>(),
    batchId: newId<BatchId>(),
    batchHash: hex('bb'),
    payloadRef: 'Qm' + n,
    contexts: [hex('cc')],
    ...over,
  }
}

/** The chain follower's sink over a real (temporary) database: BatchPin logs in, `blockchain_event_received` out. */
describe('pin ingest', () => {
  const temp = new TempDirs()
  let r: Repos
  let published: NodeEvent[][]
  let fetched: PinnedBatch[]
  let privatePins: string[]
  let ingest: ReturnType<typeof pinIngest>

  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-pin-ingest-'), 'db'))
    published = []
    fetched = []
    privatePins = []
    ingest = pinIngest({ ...r, published: (e) => published.push([...e]), fetch: (b) => fetched.push(b), wake: () => {}, privatePinned: (id, hash, signer) => privatePins.push(`${id}/${hash}/${signer}`) })
  })
  afterEach(() => r.db.close())
  after(() => temp.cleanup())

  const received = () => r.events.list({ namespace: SYSTEM_NAMESPACE, type: 'blockchain_event_received', limit: 100, skip: 0, ascending: true })

  it('writes one blockchain_event_received per stored log, network actions included, in the system namespace, published once durable', async () => {
    const logs = [log(), log({ payloadRef: '' }), log({ action: 'firefly:terminate', contexts: [], payloadRef: '' })]
    await ingest(logs, block)
    const stored = r.blockchainEvents.list({ limit: 10, skip: 0 }).reverse()
    expect(stored.map((e) => e.protocolId)).to.deep.equal(logs.map((l) => l.protocolId))
    const events = received()
    expect(events.map((e) => ({ namespace: e.namespace, reference: e.reference, tx: e.tx, topic: e.topic }))).to.deep.equal(
      stored.map((s) => ({ namespace: SYSTEM_NAMESPACE, reference: s.id, tx: s.txId, topic: BATCH_PIN_EVENT_TOPIC })),
    )
    // In the order read, one publication for the whole block range, and nothing in any other namespace.
    expect(events.map((e) => e.sequence)).to.deep.equal([events[0]!.sequence, events[0]!.sequence + 1, events[0]!.sequence + 2])
    expect(published).to.deep.equal([events])
    expect(r.events.list({ namespace: 'default', limit: 10, skip: 0 })).to.deep.equal([])
    expect(fetched.map((b) => b.batchId)).to.deep.equal([logs[0]!.batchId])
  })

  it('writes nothing for a log read again (a block range re-read after a restart), and no event for a range without logs', async () => {
    const first = log()
    await ingest([first], block)
    const again = log()
    await ingest([first, again], block)
    await ingest([], block + 10)
    const events = received()
    expect(events).to.have.length(2)
    expect(events[1]!.tx).to.equal(again.txId)
    expect(published.map((p) => p.map((e) => e.tx))).to.deep.equal([[first.txId], [again.txId]])
    expect(r.state.chainCursor()).to.equal(block + 11)
  })

  it('tells of each private pin event once it is durable (the quota on batches no pin names yet), not of broadcasts or logs read again', async () => {
    const [priv, broadcast] = [log({ payloadRef: '' }), log()]
    await ingest([priv, broadcast], block)
    await ingest([priv], block)
    expect(privatePins).to.deep.equal([`${priv.batchId}/${priv.batchHash}/${priv.author}`])
    expect(r.pins.ofBatch(priv.batchId), 'stored before it is told').to.have.length(1)
  })
})
