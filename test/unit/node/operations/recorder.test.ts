import { expect } from 'chai'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { openRepos, type Repos } from '../../../support/repos.js'
import { OperationRecorder } from '../../../../node/operations/recorder.js'
import { newId, type BatchId, type Hash, type IdentityId, type MessageId, type TxId } from '../../../../node/core/ids.js'
import type { Timestamp } from '../../../../node/core/time.js'
import type { Operation } from '../../../../node/model/index.js'

const at = (s: number) => `2024-01-01T00:00:${String(s).padStart(2, '0')}Z` as Timestamp
const GROUP = 'ee'.repeat(32) as Hash
const BLOB = 'b1'.repeat(32) as Hash

/** Operations recorded with the steps they describe, over a real database. */
describe('operations: recorder', () => {
  const temp = new TempDirs()
  let r: Repos
  let rec: OperationRecorder
  const node1 = newId<IdentityId>()
  const payload = { id: newId<BatchId>(), namespace: 'default', group: GROUP, tx: { type: 'batch_pin' as const, id: newId<TxId>() } }

  beforeEach(async () => {
    r = await openRepos(join(await temp.make('parley-operations-'), 'db'))
    rec = new OperationRecorder({ operations: r.operations, identities: r.identities })
    await r.db.transaction((tx) =>
      r.identities.insert(tx, { id: node1, did: 'did:firefly:node/node1', type: 'node', namespace: 'svc_system', name: 'node1', messages: { claim: newId<MessageId>() }, created: at(0) }),
    )
  })
  afterEach(async () => {
    await r.db.close()
    await temp.cleanup()
  })

  const ops = (): Operation[] => r.operations.list('default', { limit: 100, skip: 0 }).reverse()

  it("a private delivery: one dataexchange_send_batch per peer naming the node's UUID, Pending while retried, then settled", async () => {
    await r.db.transaction((tx) => rec.deliveryQueued(tx, payload, ['did:firefly:node/node1', 'did:firefly:node/node2'], at(1)))
    const queued = ops()
    expect(queued.map((o) => [o.type, o.status, o.plugin, o.tx])).to.deep.equal([
      ['dataexchange_send_batch', 'Pending', 'p2p', payload.tx.id],
      ['dataexchange_send_batch', 'Pending', 'p2p', payload.tx.id],
    ])
    // A node not registered here yet is named by its DID.
    expect(queued.map((o) => o.input)).to.deep.equal([
      { node: node1, group: GROUP, batch: payload.id },
      { node: 'did:firefly:node/node2', group: GROUP, batch: payload.id },
    ])
    await r.db.transaction((tx) => rec.deliverySettled(tx, payload.id, 'did:firefly:node/node1', { ok: false, reason: 'peer unreachable', final: false }, at(2)))
    expect(ops()[0]).to.deep.include({ status: 'Pending', error: 'peer unreachable', updated: at(2) })
    await r.db.transaction((tx) => {
      rec.deliverySettled(tx, payload.id, 'did:firefly:node/node1', { ok: true }, at(3))
      rec.deliverySettled(tx, payload.id, 'did:firefly:node/node2', { ok: false, reason: 'refused: bad batch', final: true }, at(4))
    })
    const [one, two] = ops()
    expect(one).to.deep.include({ status: 'Succeeded', updated: at(3) })
    expect(one).to.not.have.property('error')
    expect(two).to.deep.include({ status: 'Failed', error: 'refused: bad batch', updated: at(4) })
  })

  it('a delivery queued again after a restart keeps its operation as it stands', async () => {
    await r.db.transaction((tx) => rec.deliveryQueued(tx, payload, ['did:firefly:node/node1'], at(1)))
    await r.db.transaction((tx) => rec.deliverySettled(tx, payload.id, 'did:firefly:node/node1', { ok: true }, at(2)))
    await r.db.transaction((tx) => rec.deliveryQueued(tx, payload, ['did:firefly:node/node1'], at(5)))
    expect(ops().map((o) => [o.status, o.created])).to.deep.equal([['Succeeded', at(1)]])
  })

  it('a blob a peer acknowledged, and a blob a broadcast published, are Succeeded operations of their transaction', async () => {
    await r.db.transaction((tx) => {
      rec.blobSent(tx, payload, 'did:firefly:node/node1', BLOB, 'data-1', at(1))
      rec.blobPublished(tx, { namespace: 'default', txId: payload.tx.id }, 'data-2', 'QmBlob', at(2))
    })
    expect(ops().map((o) => [o.type, o.status, o.plugin, o.input, o.output])).to.deep.equal([
      ['dataexchange_send_blob', 'Succeeded', 'p2p', { node: node1, hash: BLOB, data_id: 'data-1' }, undefined],
      ['sharedstorage_upload_blob', 'Succeeded', 'ipfs', { dataId: 'data-2' }, { payloadRef: 'QmBlob' }],
    ])
  })

  it('an unpinned private batch has no pin operation, and no upload (it is not a broadcast)', async () => {
    const record = { id: newId<BatchId>(), type: 'private' as const, namespace: 'default', author: 'did:firefly:org/org0', key: '0x', created: at(1), hash: GROUP, manifest: '{}', txId: newId<TxId>(), state: 'sealed' as const, local: true }
    await r.db.transaction((tx) => rec.batchSealed(tx, record, false))
    expect(ops()).to.deep.equal([])
    await r.db.transaction((tx) => rec.batchSealed(tx, record, true))
    expect(ops().map((o) => o.type)).to.deep.equal(['blockchain_pin_batch'])
  })
})
