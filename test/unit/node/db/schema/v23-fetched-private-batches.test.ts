import { expect } from 'chai'
import { join } from 'node:path'
import { migrations } from '../../../../../node/db/schema/index.js'
import { newId, type Hash } from '../../../../../node/core/ids.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { forEachEngine, openBeforeVersion, openTestDatabase } from '../../../../support/repos.js'

const hash = (c: string) => c.repeat(64) as Hash

/** Version 23 keeps a private batch fetched for a broadcast pin (before v22) as delivered, so its payload is refused. */
forEachEngine('db: schema v23, private batches fetched for a broadcast pin', (engine) => {
  const temp = new TempDirs()
  after(() => temp.cleanup())

  it('clears the payload reference of received private batches only: not a broadcast, an own batch, nor a refusal', async () => {
    const dir = join(await temp.make('parley-v23-'), 'db')
    const old = await openBeforeVersion(dir, 23, engine)
    const batch = (label: string, type: string, payloadRef: string, state: string, local: number) =>
      `INSERT INTO batches (id, type, namespace, author, key, created, hash, manifest, tx_id, payload_ref, state, local)
       VALUES ('${newId()}', '${type}', 'default', '${label}', '0xabc', 'c', '${hash('b')}', '{"messages":[]}', '${newId()}', '${payloadRef}', '${state}', ${local})`
    await old.transaction((tx) => {
      tx.run(batch('fetched-private', 'private', 'Qm1', 'received', 0))
      tx.run(batch('delivered-private', 'private', '', 'received', 0))
      tx.run(batch('fetched-broadcast', 'broadcast', 'Qm2', 'received', 0))
      tx.run(batch('own-broadcast', 'broadcast', 'Qm3', 'pinned', 1))
      tx.run(batch('refused', 'broadcast', 'Qm4', 'refused', 0))
    })
    await old.close()
    const db = await openTestDatabase(dir, migrations, engine)
    const refs = new Map(db.all<{ author: string; payload_ref: string }>('SELECT author, payload_ref FROM batches').map((r) => [r.author, r.payload_ref] as const))
    expect(refs).to.deep.equal(
      new Map([
        ['fetched-private', ''],
        ['delivered-private', ''],
        ['fetched-broadcast', 'Qm2'],
        ['own-broadcast', 'Qm3'],
        ['refused', 'Qm4'],
      ]),
    )
    await db.close()
  })
})
