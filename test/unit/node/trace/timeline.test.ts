import { expect } from 'chai'
import type { BatchProgress } from '../../../../node/batch/progress.js'
import type { BlobRefsRepo } from '../../../../node/db/repos/blob-refs.js'
import type { BlobsRepo } from '../../../../node/db/repos/blobs.js'
import type { DataRepo } from '../../../../node/db/repos/data.js'
import type { DeliveriesRepo, Delivery } from '../../../../node/db/repos/deliveries.js'
import type { EventsRepo } from '../../../../node/db/repos/events.js'
import type { BatchId, DataId, Hash, MessageId, TxId } from '../../../../node/core/ids.js'
import type { Timestamp } from '../../../../node/core/time.js'
import type { BatchRecord, Data, Message } from '../../../../node/model/index.js'
import { timelineOf, type TimelineDeps } from '../../../../node/trace/timeline.js'

const T = (s: number): Timestamp => `2024-05-01T10:00:${String(s).padStart(2, '0')}Z` as Timestamp
const BATCH = '11111111-1111-4111-8111-111111111111' as BatchId
const TX = '22222222-2222-4222-8222-222222222222' as TxId
const BLOB = 'b1'.repeat(32) as Hash
const PEER = 'did:firefly:node/node1'

const message = (over: Partial<Message> = {}, header: Partial<Message['header']> = {}): Message =>
  ({
    header: { id: '33333333-3333-4333-8333-333333333333' as MessageId, type: 'private', txtype: 'batch_pin', created: T(1), namespace: 'default', author: 'did:firefly:org/org0', key: '0x', topics: ['t'], datahash: 'dd'.repeat(32), ...header },
    hash: 'aa'.repeat(32) as Hash,
    state: 'sent',
    data: [{ id: '44444444-4444-4444-8444-444444444444' as DataId, hash: 'cc'.repeat(32) as Hash }],
    ...over,
  }) as Message

const batch = (over: Partial<BatchRecord> = {}): BatchRecord => ({
  id: BATCH,
  type: 'private',
  namespace: 'default',
  author: 'did:firefly:org/org0',
  key: '0x',
  created: T(2),
  hash: 'ee'.repeat(32) as Hash,
  manifest: JSON.stringify({ messages: [{}] }),
  txId: TX,
  state: 'sealed',
  local: true,
  ...over,
})

/** The stored rows the timeline reads, as the test sets them: the repositories are its seams. */
function deps(rows: { data?: Data[]; deliveries?: Delivery[]; settled?: ReturnType<BlobRefsRepo['settled']>; heldSince?: Timestamp; submitted?: Timestamp; progress?: BatchProgress; control?: 'held' | 'dropped' } = {}): TimelineDeps {
  return {
    data: { getMany: () => rows.data ?? [] } as unknown as DataRepo,
    refs: { settled: () => rows.settled } as unknown as BlobRefsRepo,
    blobs: { heldSince: () => rows.heldSince } as unknown as BlobsRepo,
    deliveries: { ofBatch: () => rows.deliveries ?? [] } as unknown as DeliveriesRepo,
    events: { list: () => (rows.submitted ? [{ created: rows.submitted }] : []) } as unknown as EventsRepo,
    progress: () => rows.progress,
    deliveryControl: rows.control ? () => rows.control : undefined,
    orgOfNode: () => 'org1',
  }
}

const blobData = (pub?: string): Data => ({ id: '44444444-4444-4444-8444-444444444444', blob: { hash: BLOB, size: 10, ...(pub ? { public: pub } : {}) } }) as unknown as Data

describe('message timeline: each step from what is stored, and what is left out', () => {
  it('marks an unpinned message, writes one message without a plural, and sends no pin step for it', () => {
    const steps = timelineOf(deps(), { message: message({}, { txtype: 'none' }), batch: batch({ pinSent: T(5) }) })
    expect(steps.map((s) => [s.step, s.detail])).to.deep.equal([
      ['accepted', 'accepted by this member (private, unpinned)'],
      ['sealed', `sealed into private batch ${BATCH} (1 message)`],
    ])
    expect(steps[1]).to.not.have.property('tx')
  })

  it('counts a manifest without messages as none', () => {
    const steps = timelineOf(deps(), { message: message(), batch: batch({ manifest: '{}' }) })
    expect(steps[1]!.detail).to.equal(`sealed into private batch ${BATCH} (0 messages)`)
  })

  it('takes the upload and the pin from the sender\'s progress before they are recorded with the batch', () => {
    const progress = { uploaded: { at: T(3), payloadRef: 'QmBatch' }, sent: { at: T(4), chainTx: '0xabc' } } as unknown as BatchProgress
    const steps = timelineOf(deps({ progress }), { message: message({}, { type: 'broadcast' }), batch: batch({ type: 'broadcast' }) })
    expect(steps.map((s) => [s.step, s.detail])).to.deep.equal([
      ['accepted', 'accepted by this member (broadcast)'],
      ['sealed', `sealed into broadcast batch ${BATCH} (1 message)`],
      ['uploaded', 'batch uploaded to shared storage: QmBatch'],
      ['pinned', 'pin transaction sent to the chain (0xabc)'],
    ])
  })

  it('leaves out an upload whose time or reference is not known, and a blob not published or not checked yet', () => {
    const steps = timelineOf(deps({ data: [blobData(), blobData('QmBlob')] }), { message: message({}, { type: 'broadcast' }), batch: batch({ type: 'broadcast', uploaded: T(3) }) })
    expect(steps.map((s) => s.step)).to.deep.equal(['accepted', 'sealed'])
  })

  it('dates the pin of a batch pinned before its send time was recorded by its transaction_submitted event, or leaves it out', () => {
    const old = batch({ state: 'pinned', chainTx: '0xdef' })
    const steps = timelineOf(deps({ submitted: T(3) }), { message: message(), batch: old })
    expect(steps.at(-1)).to.deep.include({ step: 'pinned', at: T(3), detail: 'pin transaction submitted with its batch (0xdef)', chainTx: '0xdef' })
    const noTx = timelineOf(deps({ submitted: T(3) }), { message: message(), batch: batch({ state: 'pinned' }) })
    expect(noTx.at(-1)).to.deep.include({ step: 'pinned', detail: 'pin transaction submitted with its batch' }).and.not.have.property('chainTx')
    expect(timelineOf(deps(), { message: message(), batch: old }).map((s) => s.step)).to.deep.equal(['accepted', 'sealed'])
    // Sealed, neither sent nor pinned: no pin step.
    expect(timelineOf(deps({ submitted: T(3) }), { message: message(), batch: batch() }).map((s) => s.step)).to.deep.equal(['accepted', 'sealed'])
    // Sent, without the chain transaction known.
    expect(timelineOf(deps(), { message: message(), batch: batch({ pinSent: T(4) }) }).at(-1)).to.deep.include({ detail: 'pin transaction sent to the chain' }).and.not.have.property('chainTx')
  })

  it('describes each private delivery: done (when not recorded), refused for good, pending with its attempts, held or dropped', () => {
    const d = (over: Partial<Delivery>): Delivery => ({ batchId: BATCH, peer: PEER, state: 'pending', attempts: 0, nextAt: Date.UTC(2024, 4, 1, 10, 1, 0), created: T(3), ...over })
    const step = (delivery: Delivery, control?: 'held' | 'dropped') => timelineOf(deps({ deliveries: [delivery], control }), { message: message(), batch: batch() }).find((s) => s.step === 'delivered')!
    expect(step(d({ state: 'done', attempts: 1 }))).to.deep.include({ at: T(3), state: 'done', detail: `delivered to ${PEER} (org1); when is not recorded (shown at the time it was queued)` })
    expect(step(d({ state: 'done', attempts: 1, settled: T(6) }))).to.deep.include({ at: T(6), detail: `delivered to ${PEER} (org1)` })
    expect(step(d({ state: 'failed', attempts: 2 }))).to.deep.include({ at: T(3), state: 'failed', reason: '(no reason recorded)', detail: `refused for good by ${PEER} (org1): (no reason recorded)` })
    expect(step(d({ state: 'failed', attempts: 2, reason: 'hash mismatch', settled: T(7) }))).to.deep.include({ at: T(7), reason: 'hash mismatch' })
    expect(step(d({}))).to.deep.include({ state: 'pending', detail: `queued for ${PEER} (org1), not delivered yet` }).and.not.have.property('reason')
    expect(step(d({ attempts: 1 })).detail).to.equal(`queued for ${PEER} (org1), not delivered yet; 1 attempt so far; next attempt at 2024-05-01T10:01:00Z`)
    expect(step(d({ attempts: 3, reason: 'ECONNREFUSED' }))).to.deep.include({
      reason: 'ECONNREFUSED',
      detail: `queued for ${PEER} (org1), not delivered yet; 3 attempts so far, the last: ECONNREFUSED; next attempt at 2024-05-01T10:01:00Z`,
    })
    expect(step(d({ attempts: 2 }), 'held')).to.deep.include({ state: 'held', detail: `queued for ${PEER} (org1), not delivered yet; held by a test control; 2 attempts so far` })
    expect(step(d({}), 'dropped')).to.deep.include({ state: 'dropped', detail: `queued for ${PEER} (org1), not delivered yet; dropped by a test control (never sent while the member runs)` })
    // A control applies to pending deliveries only.
    expect(step(d({ state: 'done', settled: T(6) }), 'held')).to.deep.include({ state: 'done' })
  })

  it('on a receiver: a private batch from its node and its blobs, a broadcast from shared storage with or without its reference', () => {
    const received = batch({ local: false, node: PEER, received: T(8) })
    const steps = timelineOf(deps({ data: [blobData()], heldSince: T(9) }), { message: message({ state: 'confirmed', confirmed: T(10) }), batch: received })
    expect(steps.map((s) => [s.step, s.detail])).to.deep.equal([
      ['received', `batch ${BATCH} received from ${PEER} (org1) and verified`],
      ['blob_fetched', `blob ${BLOB} received from ${PEER} (org1) and verified`],
      ['confirmed', 'confirmed here'],
    ])
    // Without its sending node recorded, and a blob not held yet.
    const anonymous = timelineOf(deps({ data: [blobData()], heldSince: T(9) }), { message: message(), batch: batch({ local: false, received: T(8) }) })
    expect(anonymous[1]).to.deep.include({ step: 'blob_fetched', detail: `blob ${BLOB} received and verified` }).and.not.have.property('peer')
    expect(timelineOf(deps({ data: [blobData()] }), { message: message(), batch: received }).map((s) => s.step)).to.deep.equal(['received'])

    const broadcast = batch({ type: 'broadcast', local: false, received: T(8), payloadRef: 'QmBatch' })
    const fetched = timelineOf(deps({ data: [blobData('QmBlob'), { id: 'x' } as unknown as Data], settled: { ok: true, at: T(9) } }), { message: message(), batch: broadcast })
    expect(fetched.map((s) => s.detail)).to.deep.equal([`batch ${BATCH} downloaded from shared storage (QmBatch) and verified`, `blob ${BLOB} fetched from shared storage (QmBlob) and verified`])
    expect(fetched[0]).to.include({ cid: 'QmBatch' })
    const refused = timelineOf(deps({ data: [blobData('QmBlob')], settled: { ok: false, reason: 'size differs', at: T(9) } }), { message: message(), batch: broadcast })
    expect(refused.at(-1)).to.deep.include({ step: 'blob_fetched', detail: `blob ${BLOB} at QmBlob refused: size differs`, reason: 'size differs' })
    // Not checked yet, or a broadcast blob never published: no step.
    expect(timelineOf(deps({ data: [blobData('QmBlob'), blobData()] }), { message: message(), batch: broadcast }).map((s) => s.step)).to.deep.equal(['received'])
    // Not stored yet: no received step.
    expect(timelineOf(deps(), { message: message(), batch: batch({ type: 'broadcast', local: false }) })).to.deep.equal([])
  })

  it('ends with the rejection and its reason, recorded or not, and sorts steps of one instant in pipeline order', () => {
    const rejected = timelineOf(deps(), { message: message({ state: 'rejected', confirmed: T(1) }) })
    expect(rejected.map((s) => [s.step, s.detail])).to.deep.equal([
      ['accepted', 'accepted by this member (private)'],
      ['rejected', 'rejected here: (no reason recorded)'],
    ])
    expect(rejected[1]).to.not.have.property('batch')
    const withReason = timelineOf(deps(), { message: message({ state: 'rejected', confirmed: T(1), rejectReason: 'datatype not found' }), batch: batch({ created: T(1) }) })
    expect(withReason.map((s) => s.step)).to.deep.equal(['accepted', 'sealed', 'rejected'])
    expect(withReason.at(-1)).to.deep.include({ reason: 'datatype not found', batch: BATCH })
    // A confirmed time with another state (pending) is no step.
    expect(timelineOf(deps(), { message: message({ state: 'pending', confirmed: T(1) }) }).map((s) => s.step)).to.deep.equal(['accepted'])
  })
})
