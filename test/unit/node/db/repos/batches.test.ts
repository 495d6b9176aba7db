import { expect } from 'chai'
import { newId, type BatchId, type Hash, type MessageId, type TxId } from '../../../../../node/core/ids.js'
import { now } from '../../../../../node/core/time.js'
import type { BatchState } from '../../../../../node/model/index.js'
import { forEachEngine, freshReposEachTest, type Repos } from '../../../../support/repos.js'

const hash = (c: string) => c.repeat(64) as Hash

/**
 * Batches sharing an id (schema v14: a hostile member may deliver or pin one under another's id). A read by the id
 * alone answers the same one on every member holding them, whatever order they arrived in: the one its own key
 * pinned first on chain, then this member's own, then by hash; refused ones last.
 */
forEachEngine('batches sharing an id', (engine) => {
  let r: Repos
  freshReposEachTest((repos) => (r = repos), engine)
  const id = newId<BatchId>()
  const message = newId<MessageId>()

  async function store(h: Hash, opts: { key?: string; state?: BatchState; local?: boolean; messageHash?: Hash } = {}): Promise<void> {
    const manifest = `{"version":1,"id":"${id}","messages":[{"id":"${message}","hash":"${opts.messageHash ?? hash('f')}","topics":1}]}`
    await r.db.transaction((tx) =>
      r.batches.insert(tx, { id, type: 'broadcast', namespace: 'default', author: 'did:firefly:org/org0', key: opts.key ?? '0xabc', created: now(), hash: h, manifest, txId: newId<TxId>(), payloadRef: 'QmX', state: opts.state ?? 'received', local: opts.local ?? false }),
    )
  }
  async function pin(h: Hash, signer: string): Promise<void> {
    await r.db.transaction((tx) => r.pins.insert(tx, { batchId: id, batchHash: h, index: 0, hash: hash('0'), masked: false, signer, eventId: newId() }))
  }

  it('answers the one pinned first by its own key, not the first stored; then by hash; refused ones last', async () => {
    await store(hash('c'), { state: 'refused' })
    await store(hash('b'))
    await store(hash('a'), { key: '0xdef' })
    expect(r.batches.get(id)!.hash, 'no pin: the smaller hash of those not refused').to.equal(hash('a'))
    // A pin of another key names no batch here: it decides nothing of which one the id means.
    await pin(hash('a'), '0xabc')
    await pin(hash('b'), '0xabc')
    expect(r.batches.get(id)!.hash, 'pinned by its own key').to.equal(hash('b'))
    await pin(hash('a'), '0xdef')
    expect(r.batches.get(id)!.hash, 'the first pinned on chain').to.equal(hash('b'))
    expect(r.batches.byIdHash(id, hash('a'))!.key).to.equal('0xdef')
  })

  it("answers this member's own before unpinned received ones, and the batch carrying a message by its hash", async () => {
    await store(hash('a'), { messageHash: hash('8') })
    await store(hash('b'), { local: true, state: 'sealed', messageHash: hash('9') })
    expect(r.batches.get(id)!.hash).to.equal(hash('b'))
    expect(r.batches.carrying(id, message, hash('8'))!.hash).to.equal(hash('a'))
    expect(r.batches.carrying(id, message, hash('9'))!.hash).to.equal(hash('b'))
    expect(r.batches.carrying(id, message, hash('7'))).to.equal(undefined)
  })
})
