import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { Database, type Migration } from '../../node/db/database.js'
import { TempDirs, logCollector } from '../support/db/helpers.js'

/**
 * The checkpoint's export runs in a worker thread: on a database of 100+ MiB, commits go on during a checkpoint and
 * the main thread does only the checkpoint's small synchronous part. The event loop's worst delay is printed, not
 * asserted: other test workers on the same cores stretch it (an export on the main thread held it ~100 ms per
 * 100 MiB).
 */

const rowsMigration: Migration = {
  version: 1,
  name: 'rows',
  up: `CREATE TABLE big (id INTEGER PRIMARY KEY, payload BLOB NOT NULL);
       CREATE TABLE live (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);`,
}

const MiB = 1024 * 1024

/**
 * How long this (the main) thread has been runnable but not running, in ms: the second field of Linux's
 * /proc/thread-self/schedstat. Where that file is missing (not Linux, no schedstats) it reads 0, and the test
 * holds every millisecond of delay against the node.
 */
function runQueueWaitMs(): number {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]) / 1e6 || 0
  } catch {
    return 0
  }
}

describe('db: a checkpoint does not hold the event loop', function () {
  this.timeout(120_000)
  const temp = new TempDirs()
  const dbs: Database[] = []
  after(async function () {
    await Promise.all(dbs.map((db) => db.close().catch(() => {})))
    await temp.cleanup()
  })

  it('keeps committing during a checkpoint of a 100+ MiB database: the snapshot is exported off the main thread', async function () {
    // A loaded shared machine can deschedule the process once in a while; an export on the main thread
    // (~100 ms at this size) would fail every attempt.
    this.retries(1)
    const dir = await temp.make()
    const { lines, log } = logCollector()
    // Only the explicit checkpoint below: the fill must not start one of its own.
    const db = await Database.open({ dir, migrations: [rowsMigration], checkpointBytes: 4096 * MiB, log })
    dbs.push(db)
    const fillStart = performance.now()
    const payload = new Uint8Array(1000).fill(7)
    const perTx = 10_000
    let id = 0
    while (db.stats().databaseBytes < 105 * MiB) {
      await db.transaction((tx) => {
        for (let i = 0; i < perTx; i++) tx.run('INSERT INTO big (id, payload) VALUES (?, ?)', [++id, payload])
      })
    }
    const fillMs = performance.now() - fillStart
    const sizeMiB = db.stats().databaseBytes / MiB

    // Both a histogram (resolution 1 ms) and a 5 ms interval's drift, worst of each. The drift is also counted without
    // the time the main thread spent runnable but waiting for a core (its run-queue wait): what a loaded machine's
    // scheduler takes is not a stall of ours, and the limit is on what the node itself blocks.
    const histogram = monitorEventLoopDelay({ resolution: 1 })
    let worstDrift = 0
    let worstOwnDrift = 0
    let last = performance.now()
    let lastWait = runQueueWaitMs()
    const ticker = setInterval(() => {
      const now = performance.now()
      const wait = runQueueWaitMs()
      const drift = now - last - 5
      worstDrift = Math.max(worstDrift, drift)
      worstOwnDrift = Math.max(worstOwnDrift, drift - (wait - lastWait))
      last = now
      lastWait = wait
    }, 5)
    histogram.enable()

    let committed = 0
    let stop = false
    const committer = (async (): Promise<void> => {
      for (let n = 0; !stop; n++) {
        await db.transaction((tx) => tx.run('INSERT INTO live (n) VALUES (?)', [n]))
        committed++
      }
    })()
    const cpStart = performance.now()
    await db.checkpoint()
    const cpMs = performance.now() - cpStart
    const duringCheckpoint = committed
    stop = true
    await committer
    clearInterval(ticker)
    histogram.disable()

    const s = db.stats()
    const histMax = histogram.max / 1e6
    console.log(
      `      ${sizeMiB.toFixed(0)} MiB database (filled in ${Math.round(fillMs)} ms); checkpoint took ${Math.round(cpMs)} ms, ` +
        `${duringCheckpoint} commits meanwhile; main thread blocked ${s.lastCheckpointBlockedMs?.toFixed(1)} ms, export on it ${s.lastCheckpointExportMs} ms; ` +
        `worst event-loop delay ${histMax.toFixed(1)} ms (histogram), ${worstDrift.toFixed(1)} ms (5 ms interval drift), ` +
        `${worstOwnDrift.toFixed(1)} ms of it not waiting for a core`,
    )
    console.log(`      ${lines.filter((l) => l.startsWith('checkpoint:')).join('\n      ')}`)
    expect(sizeMiB).to.be.at.least(100)
    expect(s.checkpoints).to.equal(1)
    expect(s.lastCheckpointExportMs).to.equal(0)
    // The main thread's own part (seal, rotate) is small whatever the size; an export on it would take seconds here.
    expect(s.lastCheckpointBlockedMs).to.be.a('number').and.below(1000)
    // What the behaviour is: the snapshot is built off the main thread while commits go on. How long the loop was
    // held is printed above (and measured by the bench), not asserted: other test workers on the same cores stretch it.
    expect(duringCheckpoint, 'commits went on during the checkpoint').to.be.greaterThan(10)

    // The snapshot and the new journal hold everything: a crash now loses nothing.
    const image = await temp.crashImage(dir)
    const reopened = await Database.open({ dir: image, migrations: [rowsMigration] })
    dbs.push(reopened)
    expect(reopened.get('SELECT COUNT(*) AS n FROM big')).to.deep.equal({ n: id })
    expect(reopened.get('SELECT COUNT(*) AS n FROM live')).to.deep.equal({ n: committed })
  })
})
