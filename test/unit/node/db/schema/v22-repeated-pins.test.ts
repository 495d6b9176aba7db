import { expect } from 'chai'
import { join } from 'node:path'
import { migrations } from '../../../../../node/db/schema/index.js'
import { newId, type Hash } from '../../../../../node/core/ids.js'
import { TempDirs } from '../../../../support/db/helpers.js'
import { forEachEngine, openBeforeVersion, openTestDatabase } from '../../../../support/repos.js'

const hash = (c: string) => c.repeat(64) as Hash

/** Version 22 marks the private pins held already whose signer pinned their hash before them. */
forEachEngine('db: schema v22, private pins pinned before by their signer', (engine) => {
  const temp = new TempDirs()
  after(() => temp.cleanup())

  it('marks a later private copy by the same signer; not the first, another signer’s, nor a broadcast pin', async () => {
    const dir = join(await temp.make('parley-v22-'), 'db')
    const old = await openBeforeVersion(dir, 22, engine)
    const pin = (label: string, pinHash: Hash, masked: number, signer: string) =>
      `INSERT INTO pins (batch_id, batch_hash, idx, hash, masked, signer, event_id, held) VALUES ('${label}', '${hash('a')}', 0, '${pinHash}', ${masked}, '${signer}', '${newId()}', 0)`
    await old.transaction((tx) => {
      for (const [label, pinHash, masked, signer] of [
        ['first', hash('c'), 1, '0xabc'],
        ['other-signer', hash('c'), 1, '0xdef'],
        ['again', hash('c'), 1, '0xabc'],
        ['broadcast-1', hash('d'), 0, '0xabc'],
        ['broadcast-2', hash('d'), 0, '0xabc'],
      ] as const) tx.run(pin(label, pinHash, masked, signer))
    })
    await old.close()
    const db = await openTestDatabase(dir, migrations, engine)
    const marked = db.all<{ batch_id: string; repeated: number }>('SELECT batch_id, repeated FROM pins').map((r) => [r.batch_id, Number(r.repeated)] as const)
    expect(new Map(marked)).to.deep.equal(new Map([['first', 0], ['other-signer', 0], ['again', 1], ['broadcast-1', 0], ['broadcast-2', 0]]))
    await db.close()
  })
})
