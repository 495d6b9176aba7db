import { expect } from 'chai'
import type { BatchProgress } from '../../../../node/batch/progress.js'
import type { DeliveriesRepo, Delivery } from '../../../../node/db/repos/deliveries.js'
import type { BatchId, Hash, MessageId, TxId } from '../../../../node/core/ids.js'
import type { Timestamp } from '../../../../node/core/time.js'
import type { BatchRecord, Message, StoredBlockchainEvent } from '../../../../node/model/index.js'
import { waitingOf, type WaitingDeps } from '../../../../node/trace/waiting.js'

const BATCH = '11111111-1111-4111-8111-111111111111' as BatchId
const PEER = 'did:firefly:node/node1'
const PEER2 = 'did:firefly:node/node2'
const message = { header: { id: '33333333-3333-4333-8333-333333333333' as MessageId, namespace: 'default' }, hash: 'aa'.repeat(32), state: 'pending', data: [] } as unknown as Message
const batch = (over: Partial<BatchRecord> = {}): BatchRecord =>
  ({ id: BATCH, type: 'private', namespace: 'default', author: 'o', key: '0x', created: '2024-05-01T10:00:00Z', hash: 'ee'.repeat(32) as Hash, manifest: '{}', txId: '22222222-2222-4222-8222-222222222222' as TxId, state: 'sealed', local: true, ...over }) as BatchRecord
const pinEvent = { blockNumber: 42 } as StoredBlockchainEvent

/** The stored rows and live state the answer reads: the repositories and the aggregator are its seams. */
function deps(over: { deliveries?: Partial<Delivery>[]; progress?: BatchProgress; control?: 'held' | 'dropped'; explain?: WaitingDeps['explain'] } = {}): WaitingDeps {
  return {
    deliveries: { ofBatch: () => (over.deliveries ?? []).map((d) => ({ batchId: BATCH, peer: PEER, state: 'pending', attempts: 0, nextAt: 0, created: '', ...d })) } as unknown as DeliveriesRepo,
    progress: () => over.progress,
    deliveryControl: over.control ? () => over.control : undefined,
    orgOfNode: (did: string) => (did === PEER ? 'org1' : 'org2'),
    explain: over.explain ?? (() => undefined),
  } as unknown as WaitingDeps
}

describe('why a message waits: its way to the chain, then the aggregator', () => {
  it('names the mined pin transaction not read yet, or leaves it out when not recorded', () => {
    expect(waitingOf(deps(), { message, batch: batch({ state: 'pinned', chainTx: '0xabc' }) })).to.deep.equal({
      reason: 'pin', sealed: true, sent: true, chainTx: '0xabc',
      detail: `its batch ${BATCH} is sealed and its pin transaction 0xabc was mined, but this member has not read it from the chain yet`,
    })
    const unknownTx = waitingOf(deps(), { message, batch: batch({ state: 'pinned' }) })
    expect(unknownTx).to.not.have.property('chainTx')
    expect(unknownTx!.detail).to.equal(`its batch ${BATCH} is sealed and its pin transaction was mined, but this member has not read it from the chain yet`)
  })

  it('lists each private delivery with its org and state, a test control in place of pending, while the pin is on its way', () => {
    const progress = { sent: { at: '2024-05-01T10:00:01Z', chainTx: '0xdef' } } as unknown as BatchProgress
    const w = waitingOf(deps({ progress, deliveries: [{ state: 'done' }, { peer: PEER2 }] }), { message, batch: batch() })
    expect(w).to.deep.include({ reason: 'pin', sent: true, chainTx: '0xdef' })
    expect(w!.detail).to.equal(`its batch ${BATCH} is sealed; its pin transaction 0xdef was sent at 2024-05-01T10:00:01Z and is not mined yet (deliveries: ${PEER} (org1) done, ${PEER2} (org2) pending)`)
    const held = waitingOf(deps({ control: 'held', deliveries: [{}] }), { message, batch: batch() })
    expect(held!.detail).to.equal(`its batch ${BATCH} is sealed and its deliveries queued; its pin transaction is not sent yet (pins go in the order batches were sealed) (deliveries: ${PEER} (org1) held)`)
    expect(waitingOf(deps(), { message, batch: batch() })).to.deep.include({ reason: 'delivery', sent: false })
  })

  it('says whether a broadcast batch is still uploading or uploaded and waiting for its turn to pin', () => {
    const uploading = waitingOf(deps(), { message, batch: batch({ type: 'broadcast' }) })
    expect(uploading!.detail).to.equal(`its batch ${BATCH} is sealed; it is being uploaded to shared storage, then its pin transaction is sent`)
    const progress = { uploaded: { at: '2024-05-01T10:00:01Z', payloadRef: 'QmBatch' } } as unknown as BatchProgress
    expect(waitingOf(deps({ progress }), { message, batch: batch({ type: 'broadcast' }) })).to.deep.include({ cid: 'QmBatch', sent: false })
  })

  it("gives the aggregator's reason once the pin is read, with since when, or says nothing holds it back", () => {
    const at = '2024-05-01T10:00:05Z' as Timestamp
    const place = { message, batch: batch({ local: false }), pinEvent }
    expect(waitingOf(deps({ explain: () => ({ wait: { reason: 'batch', detail: 'its batch is being downloaded' }, at }) }), place)).to.deep.equal({ reason: 'batch', detail: 'its batch is being downloaded', since: at })
    expect(waitingOf(deps({ explain: () => ({ wait: { reason: 'batch', detail: 'its batch is being downloaded' } }) }), place)).to.deep.equal({ reason: 'batch', detail: 'its batch is being downloaded' })
    expect(waitingOf(deps(), place)).to.deep.equal({ reason: 'pin', detail: 'its pin was read (block 42) and its batch is here; nothing holds it back, and the aggregator decides it at its next walk' })
    expect(waitingOf(deps(), { message: { ...message, state: 'confirmed' } as Message, batch: batch(), pinEvent })).to.equal(undefined)
  })
})
