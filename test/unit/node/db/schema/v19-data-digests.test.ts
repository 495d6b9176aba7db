import { expect } from 'chai'
import { join } from 'node:path'
import { migrations } from '../../../../../node/db/schema/index.js'
import { dataDigest } from '../../../../../node/core/hashes.js'
import { newId, type Hash } from '../../../../../node/core/ids.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { indexesOf } from '../../../../support/db/indexes.js'
import { forEachEngine, openBeforeVersion, openTestDatabase } from '../../../../support/repos.js'

const hash = (c: string) => c.repeat(64) as Hash

/**
 * Version 19 keys received data rows by (id, hash, digest of the fields their batch carried): a database written
 * before reads back every row with its sequence and every index as it was; its received rows get their digests, the
 * received messages' references to them record those, and a peer's item its own messages sent on becomes its own.
 * Afterwards a copy of a received item with other carried fields is a row of its own.
 */
forEachEngine('db: schema v19, received data by (id, hash, digest)', (engine) => {
  const temp = new TempDirs()
  after(() => temp.cleanup())

  it('converts an older database without loss, backfilling digests, and then keeps copies with other fields apart', async () => {
    const dir = join(await temp.make('parley-v19-'), 'db')
    const old = await openBeforeVersion(dir, 19, engine)
    const before = indexesOf(old, engine, ['data'])
    expect(Object.keys(before)).to.include.members(['data_namespace', 'data_blob', 'data_local'])
    const [mine, theirs, received, blobbed, upload, both, sentOn] = [newId(), newId(), newId(), newId(), newId(), newId(), newId()]
    const message = (id: string, h: Hash, local: number, data: unknown[]) =>
      `INSERT INTO messages (id, namespace, type, txtype, author, key, created, created_key, topics, datahash, hash, data, state, local, confirmed_key)
       VALUES ('${id}', 'default', 'broadcast', 'batch_pin', 'did:firefly:org/org0', '0xabc', 'c', 'k', '["t"]', '${hash('d')}', '${h}', '${JSON.stringify(data)}', 'pending', ${local}, NULL)`
    const data = (id: string, local: number, extra = '', values = '') =>
      `INSERT INTO data (id, namespace, validator, hash, value, created, local${extra}) VALUES ('${id}', 'default', 'json', '${hash('c')}', '1', '2024-01-02T03:04:05Z', ${local}${values})`
    await old.transaction((tx) => {
      // A peer's message carries `received` and `blobbed` (peers' items), and `both`, this member's own. This member's
      // message carries `both` and `sentOn`, a peer's item it sent on by id. `upload` is carried by nothing.
      tx.run(message(theirs, hash('b'), 0, [received, blobbed, both].map((id) => ({ id, hash: hash('c') }))))
      tx.run(message(mine, hash('a'), 1, [both, sentOn].map((id) => ({ id, hash: hash('c') }))))
      tx.run(data(received, 0, ', datatype_name, datatype_version', `, 'widget', '1.0'`))
      tx.run(data(blobbed, 0, ', blob_hash, blob_size, blob_name, blob_public', `, '${hash('e')}', 10, 'f.bin', 'QmBlob'`))
      tx.run(data(upload, 1))
      tx.run(data(both, 1))
      tx.run(data(sentOn, 0, ', public', `, 'QmValue'`))
    })
    const dataBefore = old.all('SELECT seq, id, hash, local, datatype_name, blob_size FROM data ORDER BY seq')
    await old.close()

    const db = await openTestDatabase(dir, migrations, engine)
    expect(db.all('SELECT seq, id, hash, local, datatype_name, blob_size FROM data WHERE seq <= 5 ORDER BY seq')).to.deep.equal(dataBefore)
    const fields = { validator: 'json', namespace: 'default', created: '2024-01-02T03:04:05Z', datatypeName: null, datatypeVersion: null, blobHash: null, blobSize: null, blobName: null, blobPublic: null }
    const digests = {
      received: dataDigest({ ...fields, datatypeName: 'widget', datatypeVersion: '1.0' }),
      blobbed: dataDigest({ ...fields, blobHash: hash('e'), blobSize: 10, blobName: 'f.bin', blobPublic: 'QmBlob' }),
      sentOn: dataDigest(fields),
    }
    const digestOf = (id: string, local: number) => db.get<{ digest: string | null }>('SELECT digest FROM data WHERE id = ? AND local = ?', [id, local])?.digest
    expect(digestOf(received, 0)).to.equal(digests.received)
    expect(digestOf(blobbed, 0)).to.equal(digests.blobbed)
    expect(digestOf(sentOn, 0)).to.equal(digests.sentOn)
    expect([digestOf(upload, 1), digestOf(both, 1)], 'own rows have none').to.deep.equal([null, null])
    const refsOf = (id: string) => JSON.parse(db.get<{ data: string }>('SELECT data FROM messages WHERE id = ?', [id])!.data) as unknown[]
    expect(refsOf(theirs), 'a received message names the rows it carried by digest; its own by id and hash').to.deep.equal([
      { id: received, hash: hash('c'), digest: digests.received },
      { id: blobbed, hash: hash('c'), digest: digests.blobbed },
      { id: both, hash: hash('c') },
    ])
    expect(refsOf(mine)).to.deep.equal([both, sentOn].map((id) => ({ id, hash: hash('c') })))
    // The peer's item this member sent on is now its own too (with the publication it recorded), after the rows held.
    expect(db.all<{ seq: number; local: number; public: string | null }>('SELECT seq, local, public FROM data WHERE id = ? ORDER BY seq', [sentOn]).map((r) => [Number(r.seq), Number(r.local), r.public])).to.deep.equal([
      [5, 0, 'QmValue'],
      [6, 1, 'QmValue'],
    ])
    expect(indexesOf(db, engine, ['data']), 'every index as it was defined').to.deep.equal(before)

    // Afterwards: a copy of a received item with another datatype is a row of its own; the same copy again is not.
    const copy = `INSERT INTO data (id, namespace, validator, hash, value, created, local, datatype_name, datatype_version, digest)
                  VALUES ('${received}', 'default', 'json', '${hash('c')}', '1', '2024-01-02T03:04:05Z', 0, 'nosuch', '1', '${hash('9')}')`
    await db.transaction((tx) => tx.run(copy))
    expect(Number(db.get<{ n: number }>('SELECT count(*) AS n FROM data WHERE id = ?', [received])!.n)).to.equal(2)
    const again = await db.transaction((tx) => tx.run(copy)).then(() => 'stored', (e: unknown) => String(e))
    expect(again).to.match(/UNIQUE|unique|duplicate/)
    const secondOwn = await db.transaction((tx) => tx.run(data(upload, 1).replace(hash('c'), hash('7')))).then(() => 'stored', (e: unknown) => String(e))
    expect(secondOwn, 'one own row per id').to.match(/UNIQUE|unique|duplicate/)
    await db.close()
  })
})
