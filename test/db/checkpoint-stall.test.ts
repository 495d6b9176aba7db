import { expect } from 'chai'
import { Database, type Migration } from '../../node/db/database.js'
import { TempDirs, logCollector } from '../support/db/helpers.js'

/**
 * The checkpoint's export runs in a worker thread: commits go on during a checkpoint and the main thread does only
 * the checkpoint's small synchronous part. How long a checkpoint of a 100+ MiB database holds the event loop is
 * measured by `npm run bench -- --only db` (scripts/bench/db.ts): here a database of a few MiB shows the behaviour.
 */

const rowsMigration: Migration = {
  version: 1,
  name: 'rows',
  up: `CREATE TABLE big (id INTEGER PRIMARY KEY, payload BLOB NOT NULL);
       CREATE TABLE live (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);`,
}

const MiB = 1024 * 1024
/** Enough that the worker's build (a replay of the sealed journal, then the export) takes hundreds of milliseconds. */
const DATABASE_MIB = 4

describe('db: a checkpoint does not hold the event loop', function () {
  this.timeout(120_000)
  const temp = new TempDirs()
  const dbs: Database[] = []
  after(async function () {
    await Promise.all(dbs.map((db) => db.close().catch(() => {})))
    await temp.cleanup()
  })

  it('keeps committing during a checkpoint: the snapshot is exported off the main thread', async function () {
    const dir = await temp.make()
    const { lines, log } = logCollector()
    // Only the explicit checkpoint below: the fill must not start one of its own.
    const db = await Database.open({ dir, migrations: [rowsMigration], checkpointBytes: 4096 * MiB, log })
    dbs.push(db)
    const payload = new Uint8Array(1000).fill(7)
    const perTx = 2_000
    let id = 0
    while (db.stats().databaseBytes < DATABASE_MIB * MiB) {
      await db.transaction((tx) => {
        for (let i = 0; i < perTx; i++) tx.run('INSERT INTO big (id, payload) VALUES (?, ?)', [++id, payload])
      })
    }

    let committed = 0
    let stop = false
    const committer = (async (): Promise<void> => {
      for (let n = 0; !stop; n++) {
        await db.transaction((tx) => tx.run('INSERT INTO live (n) VALUES (?)', [n]))
        committed++
      }
    })()
    await db.checkpoint()
    const duringCheckpoint = committed
    stop = true
    await committer

    const s = db.stats()
    expect(s.checkpoints).to.equal(1)
    expect(s.lastCheckpointExportMs).to.equal(0)
    // The main thread's own part (seal, rotate) is small whatever the size.
    expect(s.lastCheckpointBlockedMs).to.be.a('number').and.below(1000)
    // A checkpoint run on the main thread from start to end would let no commit through until it is done.
    expect(duringCheckpoint, `commits went on during the checkpoint (${lines.filter((l) => l.startsWith('checkpoint:')).join('; ')})`).to.be.greaterThan(10)

    // The snapshot and the new journal hold everything: a crash now loses nothing.
    const image = await temp.crashImage(dir)
    const reopened = await Database.open({ dir: image, migrations: [rowsMigration] })
    dbs.push(reopened)
    expect(reopened.get('SELECT COUNT(*) AS n FROM big')).to.deep.equal({ n: id })
    expect(reopened.get('SELECT COUNT(*) AS n FROM live')).to.deep.equal({ n: committed })
  })
})
