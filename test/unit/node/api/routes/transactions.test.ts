import { expect } from 'chai'
import { localCall } from '../../../../support/local-http.js'
import { apiSuite } from '../../../../support/api-suite.js'
import { sealManifest } from '../../../../../node/batch/verify.js'
import { newId, type Address, type BatchId, type Hash, type TxId } from '../../../../../node/core/ids.js'
import type { Timestamp } from '../../../../../node/core/time.js'
import { OperationRecorder } from '../../../../../node/operations/recorder.js'
import { BATCH_PIN_ACTION, type BatchRecord, type BatchTxType } from '../../../../../node/model/index.js'

const KEY = '0x' + 'aa'.repeat(20)
const CONTRACT = '0x' + 'c0'.repeat(20)
const at = (s: number) => `2024-01-01T00:00:${String(s).padStart(2, '0')}Z` as Timestamp

/** Transactions and operations through the real server, over a real (temporary) database. */
describe('transactions and operations: API', () => {
  const t = apiSuite('parley-transactions-api-', (r) => ({
    config: { chain: { contract: CONTRACT } },
    query: { transactions: r.transactions, operations: r.operations, blockchainEvents: r.blockchainEvents, batches: r.batches },
  }))
  let block = 1

  /** A batch of this member, sealed at `created`, with `pins` BatchPin logs read for it. */
  async function batch(txType: BatchTxType, created: Timestamp, pins: number, namespace = 'default'): Promise<{ record: BatchRecord; txHashes: string[] }> {
    const r = t.repos
    const id = newId<BatchId>()
    const txId = newId<TxId>()
    const { manifest, hash } = sealManifest({ id, tx: { type: txType, id: txId }, messages: [], data: [] })
    const record: BatchRecord = { id, type: 'broadcast', namespace, author: 'did:firefly:org/org0', key: KEY, created, hash, manifest, txId, state: 'sealed', local: true }
    const txHashes: string[] = []
    await r.db.transaction((tx) => {
      r.batches.insert(tx, record)
      for (let i = 0; i < pins; i++) {
        const n = block++
        const txHash = '0x' + n.toString(16).padStart(64, '0')
        txHashes.push(txHash)
        r.blockchainEvents.insert(
          tx,
          { blockNumber: n, txIndex: 0, logIndex: 0, protocolId: `${String(n).padStart(12, '0')}/000000/000000`, txHash, author: KEY as Address, timestamp: 1_700_000_000 + n, action: BATCH_PIN_ACTION, txId, batchId: id, batchHash: hash, payloadRef: 'QmPayload', contexts: ['ab'.repeat(32) as Hash] },
          created,
        )
      }
    })
    return { record, txHashes }
  }

  const get = async (path: string, status = 200) => {
    const res = await localCall(t.port, 'GET', path)
    expect(res.status, res.text).to.equal(status)
    return res
  }

  it("a batch's transaction: FireFly's Transaction with the chain transactions that pinned it, oldest first", async () => {
    const { record, txHashes } = await batch('batch_pin', at(1), 2)
    const res = await get(`/api/v1/namespaces/default/transactions/${record.txId}`)
    expect(res.text).to.equal(`{"id":"${record.txId}","namespace":"default","type":"batch_pin","created":"${at(1)}","blockchainIds":["${txHashes[0]}","${txHashes[1]}"]}`)
    // The default namespace's own form; another namespace does not hold it.
    expect((await get(`/api/v1/transactions/${record.txId.toUpperCase()}`)).json).to.deep.include({ id: record.txId })
    await get(`/api/v1/namespaces/other/transactions/${record.txId}`, 404)
    expect(((await get(`/api/v1/namespaces/default/transactions/${record.txId}/blockchainevents`)).json as { tx: { blockchainId: string } }[]).map((e) => e.tx.blockchainId)).to.have.members(txHashes)
  })

  it('lists transactions newest first, with data publishes beside batches, filtered and paged', async () => {
    const unpinned = await batch('unpinned', at(3), 0)
    const published = newId<TxId>()
    await t.repos.db.transaction((tx) => t.repos.transactions.insert(tx, { id: published, namespace: 'default', type: 'data_publish', created: at(4), idempotencyKey: 'k1', blockchainIds: [] }))
    const list = (await get('/api/v1/namespaces/default/transactions')).json as { id: string; type: string; idempotencyKey?: string; blockchainIds: string[] }[]
    expect(list.slice(0, 2).map((t) => t.id)).to.deep.equal([published, unpinned.record.txId])
    expect(list[0]).to.deep.include({ type: 'data_publish', idempotencyKey: 'k1', blockchainIds: [] })
    expect(list[1]).to.deep.include({ type: 'unpinned', blockchainIds: [] })
    const pinned = (await get('/api/v1/namespaces/default/transactions?type=batch_pin')).json as { type: string }[]
    expect(pinned.length).to.be.greaterThan(0)
    expect(pinned.every((t) => t.type === 'batch_pin')).to.equal(true)
    expect((await get('/api/v1/namespaces/default/transactions?idempotencykey=k1')).json).to.have.length(1)
    expect((await get('/api/v1/namespaces/default/transactions?limit=1&skip=1')).json).to.deep.equal([list[1]])
    expect((await get('/api/v1/namespaces/default/transactions?created=>2024-01-01T00:00:03.5Z')).json).to.have.length(1)
    expect((await get('/api/v1/namespaces/default/transactions?nope=1', 400)).json).to.have.property('error').that.matches(/unknown filter field "nope"/)
  })

  it("operations: a pinned batch's pin and upload, Pending until the pin is recorded, then Succeeded with their outputs", async () => {
    const { record } = await batch('batch_pin', at(5), 1)
    const r = t.repos
    const rec = new OperationRecorder({ operations: r.operations, identities: r.identities })
    await r.db.transaction((tx) => rec.batchSealed(tx, record, true))
    const ofTx = async () => (await get(`/api/v1/namespaces/default/transactions/${record.txId}/operations`)).json as { id: string; type: string; status: string; plugin: string; tx: string; input: object; output?: object; updated: string }[]
    const pending = await ofTx()
    expect(pending.map((o) => [o.type, o.status, o.plugin]).sort()).to.deep.equal([
      ['blockchain_pin_batch', 'Pending', 'ethereum'],
      ['sharedstorage_upload_batch', 'Pending', 'ipfs'],
    ])
    const contexts = ['cd'.repeat(32) as Hash]
    await r.db.transaction((tx) => rec.batchPinned(tx, record, { chainTx: '0xfeed', payloadRef: 'QmBatch', contexts, uploaded: at(6) }, at(7)))
    const done = await ofTx()
    const pin = done.find((o) => o.type === 'blockchain_pin_batch')!
    expect(pin).to.deep.include({ status: 'Succeeded', tx: record.txId, input: { batch: record.id, contexts, payloadRef: 'QmBatch' }, output: { transactionHash: '0xfeed' }, updated: at(7) })
    const upload = done.find((o) => o.type === 'sharedstorage_upload_batch')!
    expect(upload).to.deep.include({ status: 'Succeeded', input: { id: record.id }, output: { payloadRef: 'QmBatch' }, updated: at(6) })
    // One operation by id, FireFly's field order, `tx` always there.
    const one = await get(`/api/v1/namespaces/default/operations/${pin.id}`)
    expect(Object.keys(one.json as object)).to.deep.equal(['id', 'namespace', 'tx', 'type', 'status', 'plugin', 'input', 'output', 'created', 'updated'])
    await get(`/api/v1/namespaces/other/operations/${pin.id}`, 404)
    await get('/api/v1/namespaces/default/operations/not-a-uuid', 400)
    const filtered = (await get('/api/v1/namespaces/default/operations?type=blockchain_pin_batch&status=Succeeded')).json as { id: string }[]
    expect(filtered.map((o) => o.id)).to.include(pin.id)
    // Its status: both operations, its BatchPin log (with where it is on the chain) and its batch, all Succeeded.
    const status = (await get(`/api/v1/namespaces/default/transactions/${record.txId}/status`)).json as { status: string; details: { type: string; subtype: string; status: string; id?: string; info?: object }[] }
    expect(status.status).to.equal('Succeeded')
    expect(status.details.map((d) => [d.type, d.subtype, d.status])).to.have.deep.members([
      ['Operation', 'blockchain_pin_batch', 'Succeeded'],
      ['Operation', 'sharedstorage_upload_batch', 'Succeeded'],
      ['BlockchainEvent', 'BatchPin', 'Succeeded'],
      ['Batch', 'broadcast', 'Succeeded'],
    ])
    expect(status.details.find((d) => d.type === 'Operation' && d.subtype === 'blockchain_pin_batch')).to.deep.include({ id: pin.id, info: { transactionHash: '0xfeed' } })
    expect(status.details.find((d) => d.type === 'BlockchainEvent')!.info).to.have.property('transactionHash')
  })

  it("a pinned transaction whose BatchPin log has not been read is Pending, with the missing part named", async () => {
    const { record } = await batch('batch_pin', at(8), 0)
    const status = (await get(`/api/v1/namespaces/default/transactions/${record.txId}/status`)).json
    expect(status).to.deep.equal({ status: 'Pending', details: [{ type: 'BlockchainEvent', status: 'Pending' }, { type: 'Batch', subtype: 'broadcast', status: 'Succeeded', id: record.id }] })
  })

  it('an unknown transaction is a 404, a malformed id a 400', async () => {
    await get(`/api/v1/namespaces/default/transactions/${newId<TxId>()}`, 404)
    await get(`/api/v1/namespaces/default/transactions/${newId<TxId>()}/operations`, 404)
    await get('/api/v1/namespaces/default/transactions/xyz', 400)
  })
})
