import { expect } from 'chai'
import { join } from 'node:path'
import { BatchesRepo } from '../../../../../node/db/repos/batches.js'
import { PinsRepo } from '../../../../../node/db/repos/pins.js'
import { migrations } from '../../../../../node/db/schema/index.js'
import { newId, type BatchId, type Hash, type TxId } from '../../../../../node/core/ids.js'
import { now } from '../../../../../node/core/time.js'
import type { BatchRecord, BatchState } from '../../../../../node/model/index.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { forEachEngine, openBeforeVersion, openTestDatabase } from '../../../../support/repos.js'

const hash = (c: string) => c.repeat(64) as Hash

function record(id: BatchId, state: BatchState, h: Hash, local = false): BatchRecord {
  return { id, type: 'broadcast', namespace: 'default', author: 'did:firefly:org/org0', key: '0xabc', created: now(), hash: h, manifest: '{"messages":[]}', txId: newId<TxId>(), payloadRef: 'QmX', state, local, received: now() }
}

/**
 * Version 14 rebuilds `pins` and `batches`: a database written at version 13 reads back every pin and batch with its
 * sequence, its `held` flag by (id, hash), its trigger and its partial indexes; afterwards pins of other signers or
 * hashes and batches of another hash under a known id are kept beside the first.
 */
forEachEngine('db: schema v14, pins per signer and batches by (id, hash)', (engine) => {
  const temp = new TempDirs()
  after(() => temp.cleanup())

  it('converts a version 13 database without loss, and then keeps squatters apart', async () => {
    const dir = join(await temp.make('parley-v14-'), 'db')
    const old = await openBeforeVersion(dir, 14, engine)
    const [stored, refused, mine, absent] = [newId<BatchId>(), newId<BatchId>(), newId<BatchId>(), newId<BatchId>()]
    await old.transaction((tx) => {
      const batches = new BatchesRepo(old)
      batches.insert(tx, record(stored, 'received', hash('a')))
      batches.insert(tx, record(refused, 'refused', hash('b')))
      batches.insert(tx, { ...record(mine, 'pinned', hash('c'), true), chainTx: '0x01' })
      const pins: [BatchId, Hash, number, number][] = [
        [stored, hash('a'), 0, 0],
        [stored, hash('a'), 1, 1],
        // A pin naming another hash than the stored batch's: not held (v13 marked it by id alone).
        [stored, hash('e'), 2, 0],
        [refused, hash('b'), 0, 0],
        [absent, hash('d'), 0, 0],
        [mine, hash('c'), 0, 0],
      ]
      for (const [b, h, idx, dispatched] of pins) {
        tx.run('INSERT INTO pins (batch_id, batch_hash, idx, hash, masked, signer, event_id, dispatched) VALUES (?, ?, ?, ?, 0, ?, ?, ?)', [b, h, idx, hash('f'), '0xabc', `ev-${idx}`, dispatched])
      }
    })
    const before = old.all<{ seq: number; batch_id: string; idx: number; dispatched: number }>('SELECT seq, batch_id, idx, dispatched FROM pins ORDER BY seq')
    const batchesBefore = old.all<{ seq: number; id: string; state: string }>('SELECT seq, id, state FROM batches ORDER BY seq')
    await old.close()

    const db = await openTestDatabase(dir, migrations, engine)
    const pins = new PinsRepo(db)
    const batches = new BatchesRepo(db)
    expect(db.all('SELECT seq, batch_id, idx, dispatched FROM pins ORDER BY seq')).to.deep.equal(before)
    expect(db.all('SELECT seq, id, state FROM batches ORDER BY seq')).to.deep.equal(batchesBefore)
    expect(batches.get(mine)!.chainTx).to.equal('0x01')
    const held = db.all<{ batch_id: string; batch_hash: string; held: number }>('SELECT batch_id, batch_hash, held FROM pins ORDER BY seq').map((r) => `${r.batch_id === stored ? 'stored' : r.batch_id === refused ? 'refused' : r.batch_id === mine ? 'mine' : 'absent'}:${r.batch_hash[0]}:${r.held}`)
    expect(held).to.deep.equal(['stored:a:1', 'stored:a:1', 'stored:e:0', 'refused:b:0', 'absent:d:0', 'mine:c:1'])
    const indexes = (
      engine === 'sqljs'
        ? db.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type IN ('index', 'trigger') AND tbl_name IN ('pins', 'batches') AND name NOT LIKE 'sqlite_%' ORDER BY name")
        : db.all<{ name: string }>(
            "SELECT indexname AS name FROM pg_indexes WHERE tablename IN ('pins', 'batches') AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key' UNION SELECT trigger_name FROM information_schema.triggers WHERE event_object_table IN ('pins', 'batches') ORDER BY name",
          )
    ).map((r) => r.name)
    expect(indexes).to.deep.equal(['batches_local', 'batches_state', 'batches_tx', 'pins_broadcast_waiting', 'pins_hash', 'pins_held_by_batch', 'pins_held_waiting', 'pins_waiting', 'pins_waiting_context'])

    // Afterwards: another signer's pin of the same (batch, index) is kept, a retried one of the same signer is not.
    const pin = (signer: string, batchHash: Hash) => ({ batchId: absent, batchHash, index: 0, hash: hash('f'), masked: false, signer, eventId: newId() })
    await db.transaction((tx) => pins.insertMany(tx, [pin('0xabc', hash('d')), pin('0xdef', hash('d')), pin('0xabc', hash('9'))]))
    expect(pins.ofBatch(absent).map((p) => `${p.signer}:${p.batchHash[0]}`)).to.deep.equal(['0xabc:d', '0xdef:d', '0xabc:9'])
    // A batch of another hash under a known id is kept apart, and marks only the pins naming its hash.
    await db.transaction((tx) => batches.insert(tx, record(absent, 'received', hash('d'))))
    await db.transaction((tx) => batches.insert(tx, record(absent, 'received', hash('9'))))
    await db.transaction((tx) => batches.insert(tx, record(absent, 'received', hash('9'))))
    expect(db.all<{ n: number }>('SELECT count(*) AS n FROM batches WHERE id = ?', [absent])[0]!.n).to.equal(2)
    expect(pins.heldWaitingBetween(0, 1000, 100).filter((p) => p.batchId === absent)).to.have.length(3)
    // This member's own batch keeps its one row per id.
    await db.transaction((tx) => batches.insert(tx, record(mine, 'sealed', hash('8'), true)))
    expect(batches.local(mine)!.hash).to.equal(hash('c'))
    await db.close()
  })
})
