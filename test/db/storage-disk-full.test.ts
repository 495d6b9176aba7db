import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Database, DatabaseError } from '../../node/db/database.js'
import type { SnapshotBuilder } from '../../node/db/checkpoint.js'
import { scanJournal } from '../../node/db/journal-file.js'
import { buildSnapshot } from '../../node/db/snapshot-build.js'
import { isParleyError, ParleyError } from '../../node/core/errors.js'
import { HTTP_STATUS } from '../../node/api/errors.js'
import { waitFor } from '../../network/process.js'
import { TempDirs, logCollector, openedDatabases } from '../support/db/helpers.js'
import { DiskFullFault, enospc } from '../support/db/disk-faults.js'
import { rejectionOf } from '../support/wait.js'

const insert = (db: Database, id: number): Promise<unknown> => db.transaction((tx) => tx.run('INSERT INTO items (id, name) VALUES (?, ?)', [id, `item-${id}`]))
const ids = (db: Database): number[] => db.all<{ id: number }>('SELECT id FROM items ORDER BY id').map((r) => r.id)
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i)

/** The promises' outcomes as they settle, readable at any moment. */
function track(ps: Promise<unknown>[]): { resolved: number; rejected: unknown[] } {
  const seen = { resolved: 0, rejected: [] as unknown[] }
  for (const p of ps) p.then(() => seen.resolved++, (e: unknown) => seen.rejected.push(e))
  return seen
}

function expectStorageFull(err: unknown): ParleyError {
  expect(isParleyError(err, 'STORAGE_FULL'), String(err)).to.equal(true)
  const e = err as ParleyError
  expect(HTTP_STATUS[e.code]).to.equal(507)
  expect(e.message).to.match(/disk holding the database is full \(ENOSPC: no space left on device, write\) since .*nothing of this was stored/)
  return e
}

/** The journal holds whole frames only: no damage, nothing after the last valid frame. */
async function expectCleanJournal(dir: string): Promise<void> {
  const buf = await readFile(join(dir, 'journal'))
  const scan = scanJournal(buf)
  expect(scan.damage, 'journal damage').to.equal(undefined)
  expect(scan.validEnd).to.equal(buf.length)
}

describe('db: a full disk stalls the journal instead of failing it', function () {
  const temp = new TempDirs()
  const { open: openDb, closeAll } = openedDatabases()
  afterEach(closeAll)
  after(() => temp.cleanup())

  it('holds the transactions whose append was refused, refuses new ones at once (507) while reads go on, and writes them once there is room', async function () {
    const dir = await temp.make()
    const fault = new DiskFullFault()
    const { lines, log } = logCollector()
    const db = await openDb(dir, { wrapJournal: fault.wrap, log })
    for (const id of [1, 2, 3]) await insert(db, id)

    fault.full = true
    const stalled = [4, 5, 6].map((id) => insert(db, id))
    const outcome = track(stalled)
    await waitFor('the stall', () => db.diskFull !== undefined, { intervalMs: 10 })
    await sleep(1300)
    // Retried (0.5 s, then 1 s) and still waiting: neither lost nor reported as failed.
    expect(fault.refused).to.be.at.least(2)
    expect(outcome).to.deep.equal({ resolved: 0, rejected: [] })
    expect(db.stats().pendingCommits).to.equal(1)

    let ran = false
    expectStorageFull(
      await rejectionOf<unknown>(
        db.transaction(() => {
          ran = true
        }),
      ),
    )
    expect(ran, 'a refused transaction does not run').to.equal(false)
    expectStorageFull(await rejectionOf<unknown>(db.checkpoint()))
    // Reads see what the database holds in memory, stalled transactions included.
    expect(ids(db)).to.deep.equal(range(1, 6))
    expect(lines.filter((l) => l.includes('the disk is full'))).to.have.length(1)

    fault.full = false
    await Promise.all(stalled)
    expect(db.diskFull).to.equal(undefined)
    expect(lines.filter((l) => l.includes('written again; the disk was full from'))).to.have.length(1)
    await insert(db, 7)
    expect(db.stats().durableSeq).to.equal(db.stats().lastSeq)

    // Killed now, the member comes back with everything that was acknowledged, from a journal of whole frames.
    const image = await temp.crashImage(dir)
    await expectCleanJournal(image)
    expect(ids(await openDb(image))).to.deep.equal(range(1, 7))
  })

  it('cuts a short write that ran into the full disk, so the journal never holds a part frame', async function () {
    const dir = await temp.make()
    const fault = new DiskFullFault()
    const db = await openDb(dir, { wrapJournal: fault.wrap })
    for (const id of [1, 2]) await insert(db, id)
    const goodLength = db.stats().journalBytes

    fault.torn()
    const stalled = [3, 4].map((id) => insert(db, id))
    await waitFor('the stall', () => db.diskFull !== undefined, { intervalMs: 5 })
    // Half a frame reached the file and was cut back before the committer even saw the error.
    expect(fault.refused).to.equal(1)
    expect((await stat(join(dir, 'journal'))).size).to.equal(goodLength)
    expect(fault.journals.at(-1)!.size).to.equal(goodLength)
    await expectCleanJournal(dir)
    const whileStalled = await temp.crashImage(dir)
    expect(ids(await openDb(whileStalled))).to.deep.equal([1, 2])

    fault.full = false
    await Promise.all(stalled)
    await expectCleanJournal(dir)
    const image = await temp.crashImage(dir)
    expect(ids(await openDb(image))).to.deep.equal([1, 2, 3, 4])
  })

  it('keeps a failed fdatasync fatal, even with ENOSPC: the kernel may have dropped the pages', async function () {
    const dir = await temp.make()
    const fault = new DiskFullFault()
    const db = await openDb(dir, { wrapJournal: fault.wrap })
    await insert(db, 1)
    fault.syncError = enospc('fdatasync')
    const failed = await rejectionOf<unknown>(insert(db, 2))
    expect((failed as DatabaseError).code).to.equal('DB_FAILED')
    expect(db.diskFull).to.equal(undefined)
    fault.syncError = undefined
    expect(((await rejectionOf<unknown>(insert(db, 3))) as DatabaseError).code).to.equal('DB_FAILED')
  })

  it('gives up waiting at close: the stalled transactions reject with STORAGE_FULL and the folder keeps what was acknowledged', async function () {
    const dir = await temp.make()
    const fault = new DiskFullFault()
    const db = await openDb(dir, { wrapJournal: fault.wrap })
    for (const id of [1, 2]) await insert(db, id)
    fault.full = true
    const stalled = [3, 4].map((id) => insert(db, id))
    const outcome = track(stalled)
    await waitFor('the stall', () => db.diskFull !== undefined, { intervalMs: 10 })

    const started = Date.now()
    await db.close()
    expect(Date.now() - started).to.be.below(1000)
    await Promise.allSettled(stalled)
    expect(outcome.resolved).to.equal(0)
    expect(outcome.rejected).to.have.length(2)
    for (const e of outcome.rejected) expect(isParleyError(e, 'STORAGE_FULL')).to.equal(true)
    await expectCleanJournal(dir)
    expect(ids(await openDb(dir))).to.deep.equal([1, 2])
  })

  it('lets a checkpoint rotation wait out a stall that starts while it flushes the sealed tick', async function () {
    const dir = await temp.make()
    const fault = new DiskFullFault()
    const db = await openDb(dir, { wrapJournal: fault.wrap })
    for (const id of [1, 2]) await insert(db, id)

    fault.full = true
    // The rotation seals this tick and must write it to the journal it closes: that write stalls.
    const stalled = insert(db, 3)
    const checkpoint = db.checkpoint()
    const outcome = track([stalled, checkpoint])
    await waitFor('the stall', () => db.diskFull !== undefined, { intervalMs: 10 })
    expectStorageFull(await rejectionOf<unknown>(insert(db, 4)))
    await sleep(600)
    expect(outcome).to.deep.equal({ resolved: 0, rejected: [] })
    expect(existsSync(join(dir, 'journal.sealed'))).to.equal(false)

    fault.full = false
    await Promise.all([stalled, checkpoint])
    expect(db.stats().checkpoints).to.equal(1)
    await insert(db, 5)
    const image = await temp.crashImage(dir)
    expect(ids(await openDb(image))).to.deep.equal([1, 2, 3, 5])
  })

  it('logs a snapshot build that failed for want of space once, and retries it on a time backoff, not only after more growth', async function () {
    const dir = await temp.make()
    const { lines, log } = logCollector()
    let builds = 0
    let failing = 2
    const builder: SnapshotBuilder = async (d, started) => {
      builds++
      started()
      if (failing-- > 0) throw Object.assign(new Error('checkpoint worker: ENOSPC: no space left on device, write'), { code: 'ENOSPC' })
      return buildSnapshot(d)
    }
    // Every flush makes a checkpoint due: only the backoff holds the retry.
    const db = await openDb(dir, { log, buildSnapshot: builder, checkpointBytes: 1 })
    await insert(db, 1)
    await waitFor('the first build', () => builds === 1, { intervalMs: 10 })
    await db.checkpoint().catch(() => undefined)
    expect(builds).to.equal(2)
    expect(lines.filter((l) => l.startsWith('checkpoint: building the snapshot failed')), lines.join('\n')).to.have.length(1)

    // Within the backoff (2 s after the first failure, 4 s after the second) commits do not start another build.
    await insert(db, 2)
    await sleep(200)
    await insert(db, 3)
    expect(builds).to.equal(2)
    expect(existsSync(join(dir, 'journal.sealed'))).to.equal(true)

    await sleep(4000)
    await insert(db, 4)
    await waitFor('the retried build', () => db.stats().checkpoints >= 1, { timeoutMs: 10_000, intervalMs: 20 })
    expect(builds).to.equal(3)
    await waitFor('the sealed journal folded', () => !existsSync(join(dir, 'journal.sealed')), { timeoutMs: 10_000, intervalMs: 20 })
    await db.close()
    expect(ids(await openDb(dir))).to.deep.equal([1, 2, 3, 4])
  })
})
