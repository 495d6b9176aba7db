import { expect } from 'chai'
import { newId, type BatchId, type Hash, type TxId } from '../../../../../node/core/ids.js'
import type { Timestamp } from '../../../../../node/core/time.js'
import { forEachEngine, freshReposEachTest, type Repos } from '../../../../support/repos.js'

/**
 * A batch's transaction is read from the batch that carries it: its type from the manifest (batch_pin when the
 * manifest names none), the first batch stored with that id answering for it, and a transaction no batch carries
 * from its own row.
 */
forEachEngine('transactions of batches', (engine) => {
  let r: Repos
  freshReposEachTest((repos) => (r = repos), engine)

  async function batch(txId: TxId, namespace: string, manifest: string, created: string): Promise<void> {
    await r.db.transaction((tx) =>
      r.batches.insert(tx, { id: newId<BatchId>(), type: 'broadcast', namespace, author: 'did:firefly:org/org0', key: '0xabc', created: created as Timestamp, hash: 'a'.repeat(64) as Hash, manifest, txId, state: 'received', local: false }),
    )
  }

  it('answers no transaction for no ids, and each carried one once, by the batch stored first', async () => {
    expect(r.transactions.byIds([]).size).to.equal(0)
    const [pinned, unpinned, legacy] = [newId<TxId>(), newId<TxId>(), newId<TxId>()]
    await batch(pinned, 'ns1', `{"tx":{"type":"batch_pin","id":"${pinned}"},"messages":[]}`, '2026-01-01T00:00:01Z')
    // A second batch naming the same transaction (a peer's forgery) answers nothing of it.
    await batch(pinned, 'ns2', `{"tx":{"type":"unpinned","id":"${pinned}"},"messages":[]}`, '2026-01-01T00:00:02Z')
    await batch(unpinned, 'ns1', `{"tx":{"type":"unpinned","id":"${unpinned}"},"messages":[]}`, '2026-01-01T00:00:03Z')
    await batch(legacy, 'ns1', '{"messages":[]}', '2026-01-01T00:00:04Z')
    const found = r.transactions.byIds([pinned, unpinned, legacy, newId<TxId>()])
    expect([...found.values()]).to.deep.equal([
      { id: pinned, namespace: 'ns1', type: 'batch_pin', created: '2026-01-01T00:00:01Z', blockchainIds: [] },
      { id: unpinned, namespace: 'ns1', type: 'unpinned', created: '2026-01-01T00:00:03Z', blockchainIds: [] },
      { id: legacy, namespace: 'ns1', type: 'batch_pin', created: '2026-01-01T00:00:04Z', blockchainIds: [] },
    ])
    expect(r.transactions.get(pinned)).to.deep.include({ namespace: 'ns1', type: 'batch_pin' })
  })
})
