import { expect } from 'chai'
import { Database } from '../../node/db/database.js'
import { checkpointWhileCommitting, fillRows, rowsMigration } from '../support/db/checkpoint-load.js'
import { TempDirs, logCollector } from '../support/db/helpers.js'

/**
 * The checkpoint's export runs in a worker thread: commits go on during a checkpoint and the main thread does only
 * the checkpoint's small synchronous part. How long a checkpoint of a 100+ MiB database holds the event loop is
 * measured by `npm run bench -- --only db` (scripts/bench/db.ts): here a database of a few MiB shows the behaviour.
 */

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
    const id = await fillRows(db, DATABASE_MIB * MiB, 2_000)
    const { during: duringCheckpoint, committed } = await checkpointWhileCommitting(db)

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
