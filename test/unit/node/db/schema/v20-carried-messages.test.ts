import { expect } from 'chai'
import { join } from 'node:path'
import { migrations } from '../../../../../node/db/schema/index.js'
import { newId, type Hash } from '../../../../../node/core/ids.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { forEachEngine, openBeforeVersion, openTestDatabase } from '../../../../support/repos.js'

const hash = (c: string) => c.repeat(64) as Hash

/**
 * Version 20 adds what further batches carried with a message held already, and has the broadcast batches fetched
 * again, by id and hash, whose pending messages name this member's own item (a reference without a digest, from
 * version 18) or that carried a message pending from another batch: stored again, their items are read as those
 * batches carried them. Nothing else changes.
 */
forEachEngine('db: schema v20, messages as each batch carried them', (engine) => {
  const temp = new TempDirs()
  after(() => temp.cleanup())

  it('deletes, by id and hash, the received broadcast batches to fetch again: of a message naming an own item, or carrying one pending from another', async () => {
    const dir = join(await temp.make('parley-v20-'), 'db')
    const old = await openBeforeVersion(dir, 20, engine)
    const [own, received] = [newId(), newId()]
    const msgs = { ofOwn: newId(), ofReceived: newId(), privateOfOwn: newId(), settled: newId() }
    const batches = { ofOwn: newId(), ofReceived: newId(), privateOfOwn: newId(), settled: newId(), carrier: newId() }
    const batch = (id: string, type: string, batchHash: Hash, listed: string[]) =>
      `INSERT INTO batches (id, type, namespace, author, key, created, hash, manifest, tx_id, payload_ref, state, local)
       VALUES ('${id}', '${type}', 'default', 'did:firefly:org/org0', '0xabc', 'c', '${batchHash}', '${JSON.stringify({ messages: listed.map((m) => ({ id: m, hash: hash('a') })) })}', '${newId()}', 'Qm', 'received', 0)`
    const message = (id: string, type: string, batchId: string, state: string, data: unknown[]) =>
      `INSERT INTO messages (id, namespace, type, txtype, author, key, created, created_key, topics, datahash, hash, data, state, local, batch_id, confirmed_key)
       VALUES ('${id}', 'default', '${type}', 'batch_pin', 'did:firefly:org/org0', '0xabc', 'c', 'k', '["t"]', '${hash('d')}', '${hash('a')}', '${JSON.stringify(data)}', '${state}', 0, '${batchId}', NULL)`
    await old.transaction((tx) => {
      tx.run(batch(batches.ofOwn, 'broadcast', hash('b'), [msgs.ofOwn]))
      // Another batch under that id, not listing the message: kept.
      tx.run(batch(batches.ofOwn, 'broadcast', hash('f'), []))
      tx.run(batch(batches.ofReceived, 'broadcast', hash('b'), [msgs.ofReceived]))
      // Another batch of the author carrying the received one's message again, stored after it: nothing recorded.
      tx.run(batch(batches.carrier, 'broadcast', hash('b'), [msgs.ofReceived]))
      tx.run(batch(batches.privateOfOwn, 'private', hash('b'), [msgs.privateOfOwn]))
      tx.run(batch(batches.settled, 'broadcast', hash('b'), [msgs.settled]))
      tx.run(message(msgs.ofOwn, 'broadcast', batches.ofOwn, 'pending', [{ id: received, hash: hash('c'), digest: hash('e') }, { id: own, hash: hash('c') }]))
      tx.run(message(msgs.ofReceived, 'broadcast', batches.ofReceived, 'pending', [{ id: received, hash: hash('c'), digest: hash('e') }]))
      tx.run(message(msgs.privateOfOwn, 'private', batches.privateOfOwn, 'pending', [{ id: own, hash: hash('c') }]))
      tx.run(message(msgs.settled, 'broadcast', batches.settled, 'confirmed', [{ id: own, hash: hash('c') }]))
    })
    await old.close()

    const db = await openTestDatabase(dir, migrations, engine)
    const held = db.all<{ id: string; hash: string }>('SELECT id, hash FROM batches').map((r) => `${r.id}/${r.hash}`).sort()
    expect(held).to.deep.equal([`${batches.ofOwn}/${hash('f')}`, `${batches.ofReceived}/${hash('b')}`, `${batches.privateOfOwn}/${hash('b')}`, `${batches.settled}/${hash('b')}`].sort())
    expect(Number(db.get<{ n: number }>('SELECT count(*) AS n FROM messages')!.n), 'every message stays').to.equal(4)
    expect(db.all('SELECT * FROM carried_messages')).to.deep.equal([])
    await db.close()
  })
})
