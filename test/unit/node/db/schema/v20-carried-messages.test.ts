import { expect } from 'chai'
import { join } from 'node:path'
import { migrations } from '../../../../../node/db/schema/index.js'
import { newId, type Hash } from '../../../../../node/core/ids.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { forEachEngine, openTestDatabase } from '../../../../support/repos.js'

const hash = (c: string) => c.repeat(64) as Hash

/**
 * Version 20 adds what further batches carried with a message held already, and has the broadcast batches fetched
 * again whose pending messages name this member's own item (a reference without a digest, from version 18): stored
 * again, their items are read as those batches carried them. Nothing else changes.
 */
forEachEngine('db: schema v20, messages as each batch carried them', (engine) => {
  const temp = new TempDirs()
  after(() => temp.cleanup())

  it('deletes only the records of received broadcast batches whose pending messages name an own item by id and hash', async () => {
    const dir = join(await temp.make('parley-v20-'), 'db')
    const v20 = migrations.findIndex((m) => m.version === 20)
    const old = await openTestDatabase(dir, migrations.slice(0, v20), engine)
    const [own, received] = [newId(), newId()]
    const batches = { ofOwn: newId(), ofReceived: newId(), privateOfOwn: newId(), settled: newId() }
    const batch = (id: string, type: string) =>
      `INSERT INTO batches (id, type, namespace, author, key, created, hash, manifest, tx_id, payload_ref, state, local)
       VALUES ('${id}', '${type}', 'default', 'did:firefly:org/org0', '0xabc', 'c', '${hash('b')}', '{"messages":[]}', '${newId()}', 'Qm', 'received', 0)`
    const message = (type: string, batchId: string, state: string, data: unknown[]) =>
      `INSERT INTO messages (id, namespace, type, txtype, author, key, created, created_key, topics, datahash, hash, data, state, local, batch_id, confirmed_key)
       VALUES ('${newId()}', 'default', '${type}', 'batch_pin', 'did:firefly:org/org0', '0xabc', 'c', 'k', '["t"]', '${hash('d')}', '${hash('a')}', '${JSON.stringify(data)}', '${state}', 0, '${batchId}', NULL)`
    await old.transaction((tx) => {
      for (const [id, type] of [[batches.ofOwn, 'broadcast'], [batches.ofReceived, 'broadcast'], [batches.privateOfOwn, 'private'], [batches.settled, 'broadcast']] as const) tx.run(batch(id, type))
      tx.run(message('broadcast', batches.ofOwn, 'pending', [{ id: received, hash: hash('c'), digest: hash('e') }, { id: own, hash: hash('c') }]))
      tx.run(message('broadcast', batches.ofReceived, 'pending', [{ id: received, hash: hash('c'), digest: hash('e') }]))
      tx.run(message('private', batches.privateOfOwn, 'pending', [{ id: own, hash: hash('c') }]))
      tx.run(message('broadcast', batches.settled, 'confirmed', [{ id: own, hash: hash('c') }]))
    })
    await old.close()

    const db = await openTestDatabase(dir, migrations, engine)
    const held = db.all<{ id: string }>('SELECT id FROM batches ORDER BY id').map((r) => r.id)
    expect(held).to.deep.equal([batches.ofReceived, batches.privateOfOwn, batches.settled].sort())
    expect(Number(db.get<{ n: number }>('SELECT count(*) AS n FROM messages')!.n), 'every message stays').to.equal(4)
    expect(db.all('SELECT * FROM carried_messages')).to.deep.equal([])
    await db.close()
  })
})
