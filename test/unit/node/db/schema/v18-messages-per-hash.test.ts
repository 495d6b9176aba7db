import { expect } from 'chai'
import { join } from 'node:path'
import { migrations } from '../../../../../node/db/schema/index.js'
import { newId, type Hash } from '../../../../../node/core/ids.js'
import { writeConfirmedBatches } from '../../../../support/db/confirmed-batches.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { indexesOf } from '../../../../support/db/indexes.js'
import { forEachEngine, openBeforeVersion, openTestDatabase } from '../../../../support/repos.js'

const hash = (c: string) => c.repeat(64) as Hash

/**
 * Version 18 rebuilds `messages` and `data` unique per (id, hash): a database written before reads back every row with
 * its sequence and every index as it was defined (v17's list indexes among them), and its confirmed pinned messages
 * with their batch's first deciding pin; afterwards a row of another hash under a known id is kept beside the first, while this
 * member's own messages keep one row per id.
 */
forEachEngine('db: schema v18, messages and data by (id, hash)', (engine) => {
  const temp = new TempDirs()
  after(() => temp.cleanup())

  it('converts an older database without loss, and then keeps rows of another hash apart', async () => {
    const dir = join(await temp.make('parley-v18-'), 'db')
    const old = await openBeforeVersion(dir, 18, engine)
    const before = indexesOf(old, engine, ['messages', 'data', 'events'])
    expect(Object.keys(before)).to.include.members(['messages_natural', 'messages_topics', 'messages_cid', 'messages_group', 'events_reference'])
    const [mine, theirs, item, upload, batch, both, other] = [newId(), newId(), newId(), newId(), newId(), newId(), newId()]
    const message = (id: string, h: Hash, local: number, state: string, batchId?: string, data = '[]') =>
      `INSERT INTO messages (id, namespace, type, txtype, author, key, created, created_key, topics, datahash, hash, data, state, local, confirmed_key, batch_id)
       VALUES ('${id}', 'default', 'broadcast', 'batch_pin', 'did:firefly:org/org0', '0xabc', 'c', 'k', '["t"]', '${hash('d')}', '${h}', '${data}', '${state}', ${local}, ${state === 'confirmed' ? "'z'" : 'NULL'}, ${batchId ? `'${batchId}'` : 'NULL'})`
    const pin = (signer: string, idx: number) =>
      `INSERT INTO pins (batch_id, batch_hash, idx, hash, masked, signer, event_id) VALUES ('${batch}', '${hash('8')}', ${idx}, '${hash('7')}', 0, '${signer}', 'e')`
    await old.transaction((tx) => {
      // A peer's message carries `item`: a peer's data item. `upload`, carried by no message, is this member's own; so
      // is `both`, carried by this member's message and a peer's, and `other`, whose id a peer's message names with
      // another hash.
      tx.run(message(mine, hash('a'), 1, 'ready', undefined, JSON.stringify([{ id: both, hash: hash('c') }])))
      const carried = [item, both].map((id) => ({ id, hash: hash('c') })).concat([{ id: other, hash: hash('9') }])
      tx.run(message(theirs, hash('b'), 0, 'confirmed', batch, JSON.stringify(carried)))
      tx.run(`INSERT INTO batches (id, type, namespace, author, key, created, hash, manifest, tx_id, state, local)
              VALUES ('${batch}', 'broadcast', 'default', 'did:firefly:org/org0', '0xabc', 'c', '${hash('8')}', '{"messages":[{"id":"${theirs}","hash":"${hash('b')}","topics":2}]}', 't', 'received', 0)`)
      // A copy of its pin signed by another key comes first on chain: it decides nothing.
      tx.run(pin('0xother', 0))
      tx.run(pin('0xabc', 0))
      tx.run(pin('0xabc', 1))
      tx.run(`INSERT INTO data (id, namespace, validator, hash, value, created, public) VALUES ('${item}', 'default', 'json', '${hash('c')}', '1', 'c', 'QmValue')`)
      tx.run(`INSERT INTO data (id, namespace, validator, hash, value, created) VALUES ('${upload}', 'default', 'json', '${hash('c')}', '1', 'c')`)
      tx.run(`INSERT INTO data (id, namespace, validator, hash, value, created) VALUES ('${both}', 'default', 'json', '${hash('c')}', '1', 'c')`)
      tx.run(`INSERT INTO data (id, namespace, validator, hash, value, created) VALUES ('${other}', 'default', 'json', '${hash('c')}', '1', 'c')`)
      tx.run(`INSERT INTO events (id, type, namespace, reference, created) VALUES ('${newId()}', 'message_confirmed', 'default', '${theirs}', 'c')`)
    })
    const firstOwnPin = Number(old.all<{ s: number }>(`SELECT MIN(seq) AS s FROM pins WHERE signer = '0xabc'`)[0]!.s)
    const messagesBefore = old.all('SELECT seq, id, hash, state, local FROM messages ORDER BY seq')
    const dataBefore = old.all('SELECT seq, id, hash, public FROM data ORDER BY seq')
    await old.close()

    const db = await openTestDatabase(dir, migrations, engine)
    expect(db.all('SELECT seq, id, hash, state, local FROM messages ORDER BY seq')).to.deep.equal(messagesBefore)
    expect(db.all('SELECT seq, id, hash, public FROM data ORDER BY seq')).to.deep.equal(dataBefore)
    expect(db.all<{ p: number | null }>('SELECT pin_seq AS p FROM messages ORDER BY seq').map((r) => (r.p === null ? null : Number(r.p)))).to.deep.equal([null, firstOwnPin])
    expect(db.all('SELECT reference_hash FROM events')).to.deep.equal([{ reference_hash: null }])
    expect(db.all<{ id: string; local: number }>('SELECT id, local FROM data ORDER BY seq').map((r) => [r.id, Number(r.local)])).to.deep.equal([
      [item, 0],
      [upload, 1],
      [both, 1],
      [other, 1],
    ])
    const after = indexesOf(db, engine, ['messages', 'data', 'events'])
    expect(Object.keys(after).filter((n) => !(n in before)), 'new').to.deep.equal(['data_local', 'messages_local'])
    delete after.messages_local
    delete after.data_local
    expect(after, 'every index as it was defined').to.deep.equal(before)
    // Afterwards: another hash under a known id is a row of its own; a second row of this member's own id is not.
    await db.transaction((tx) => tx.run(message(theirs, hash('e'), 0, 'pending')))
    await db.transaction((tx) => tx.run(message(mine, hash('f'), 0, 'pending')))
    await db.transaction((tx) => tx.run(`INSERT INTO data (id, namespace, validator, hash, value, created, local) VALUES ('${item}', 'default', 'json', '${hash('9')}', '2', 'c', 0)`))
    expect(Number(db.all<{ n: number }>('SELECT count(*) AS n FROM messages')[0]!.n)).to.equal(4)
    expect(Number(db.all<{ n: number }>('SELECT count(*) AS n FROM data')[0]!.n)).to.equal(5)
    const second = await db.transaction((tx) => tx.run(message(mine, hash('7'), 1, 'ready'))).then(() => 'stored', (e: unknown) => String(e))
    expect(second).to.match(/UNIQUE|unique|duplicate/)
    // New rows follow the copied ones.
    expect(Number(db.all<{ s: number }>('SELECT MAX(seq) AS s FROM messages')[0]!.s)).to.equal(4)
    await db.close()
  })

  // A bound on a regression, not a speed figure: on sql.js a backfill walking every pin of a batch per message, with a
  // manifest search each, takes minutes at this size; finding each batch's first pin once, well under a second.
  // The bound is sql.js's, where the slow form is slowest; on PostgreSQL writing the rows alone costs seconds.
  if (engine === 'sqljs') {
    it('gives 10,000 confirmed messages in batches of 200 their first pins within the test timeout', async function () {
      this.timeout(20_000)
      const dir = join(await temp.make('parley-v18-'), 'db')
      const old = await openBeforeVersion(dir, 18, engine)
      await writeConfirmedBatches(old, 10_000, 200)
      // Another batch stored under b0's id, with another hash and a later pin: its message takes its own batch's pin.
      await old.transaction((tx) => {
        tx.run(`INSERT INTO batches (id, type, namespace, author, key, created, hash, manifest, tx_id, state, local)
                VALUES ('b0', 'broadcast', 'default', 'did:firefly:org/org1', '0xpeer', 'c', '${hash('e')}', '{"messages":[{"id":"late","hash":"${hash('f')}","topics":1}]}', 't', 'received', 0)`)
        tx.run(`INSERT INTO pins (batch_id, batch_hash, idx, hash, masked, signer, event_id) VALUES ('b0', '${hash('e')}', 0, '${hash('7')}', 0, '0xpeer', 'e')`)
        tx.run(`INSERT INTO messages (id, namespace, type, txtype, author, key, created, created_key, topics, datahash, hash, data, state, local, confirmed_key, batch_id)
                VALUES ('late', 'default', 'broadcast', 'batch_pin', 'did:firefly:org/org1', '0xpeer', 'c', 'k', '["t"]', '${hash('d')}', '${hash('f')}', '[]', 'confirmed', 0, 'z', 'b0')`)
      })
      await old.close()
      const db = await openTestDatabase(dir, migrations, engine)
      const wrong = db.all<{ n: number }>(
        `SELECT count(*) AS n FROM messages m WHERE id != 'late' AND (pin_seq IS NULL OR pin_seq != (
            SELECT MIN(p.seq) FROM pins p WHERE p.batch_id = m.batch_id AND p.batch_hash = (SELECT b.hash FROM batches b WHERE b.id = m.batch_id ORDER BY b.seq LIMIT 1)))`,
      )
      expect(Number(wrong[0]!.n)).to.equal(0)
      const late = db.all<{ p: number }>(`SELECT pin_seq AS p FROM messages WHERE id = 'late'`)
      expect(Number(late[0]!.p)).to.equal(Number(db.all<{ s: number }>(`SELECT MAX(seq) AS s FROM pins`)[0]!.s))
      await db.close()
    })
  }
})
