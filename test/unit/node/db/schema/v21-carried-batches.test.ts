import { expect } from 'chai'
import { join } from 'node:path'
import { migrations } from '../../../../../node/db/schema/index.js'
import { newId, type Hash } from '../../../../../node/core/ids.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { forEachEngine, openBeforeVersion, openTestDatabase } from '../../../../support/repos.js'

const hash = (c: string) => c.repeat(64) as Hash

/** Version 21 marks the received batches that recorded what they carried (v20), by id and hash. */
forEachEngine('db: schema v21, batches that recorded what they carried', (engine) => {
  const temp = new TempDirs()
  after(() => temp.cleanup())

  it('marks a batch with carried records, not another under its id nor one without', async () => {
    const dir = join(await temp.make('parley-v21-'), 'db')
    const old = await openBeforeVersion(dir, 21, engine)
    const [withRecords, without] = [newId(), newId()]
    const batch = (id: string, batchHash: Hash) =>
      `INSERT INTO batches (id, type, namespace, author, key, created, hash, manifest, tx_id, payload_ref, state, local)
       VALUES ('${id}', 'private', 'default', 'did:firefly:org/org0', '0xabc', 'c', '${batchHash}', '{"messages":[]}', '${newId()}', 'Qm', 'received', 0)`
    await old.transaction((tx) => {
      tx.run(batch(withRecords, hash('b')))
      tx.run(batch(withRecords, hash('c')))
      tx.run(batch(without, hash('b')))
      tx.run(`INSERT INTO carried_messages (batch_id, batch_hash, message_id, message_hash, data, pins) VALUES ('${withRecords}', '${hash('b')}', '${newId()}', '${hash('a')}', '[]', NULL)`)
    })
    await old.close()
    const db = await openTestDatabase(dir, migrations, engine)
    const marked = db.all<{ id: string; hash: string; carried: number }>('SELECT id, hash, carried FROM batches').map((r) => [`${r.id}/${r.hash}`, Number(r.carried)] as const)
    expect(new Map(marked)).to.deep.equal(new Map([[`${withRecords}/${hash('b')}`, 1], [`${withRecords}/${hash('c')}`, 0], [`${without}/${hash('b')}`, 0]]))
    await db.close()
  })
})
