import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { appendFile, copyFile, readFile, readdir, rename, stat, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Database, DatabaseError, type Migration } from '../../node/db/database.js'
import type { JournalSink } from '../../node/db/journal-file.js'
import type { SnapshotBuilder } from '../../node/db/checkpoint.js'
import { buildSnapshot } from '../../node/db/snapshot-build.js'
import { TempDirs, itemsMigration, logCollector, openedDatabases } from '../support/db/helpers.js'

const HEADER = 8

async function insertMany(db: Database, from: number, count: number, perTx = 1): Promise<void> {
  const all: Promise<unknown>[] = []
  for (let i = from; i < from + count; i += perTx) {
    all.push(
      db.transaction((tx) => {
        for (let j = i; j < Math.min(i + perTx, from + count); j++) tx.run('INSERT INTO items (id, name) VALUES (?, ?)', [j, `item-${j}`])
      }),
    )
  }
  await Promise.all(all)
}

function ids(db: Database): number[] {
  return db.all<{ id: number }>('SELECT id FROM items ORDER BY id').map((r) => r.id)
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i)
}

describe('db: durability and recovery', function () {
  const temp = new TempDirs()
  const { open: openDb, closeAll } = openedDatabases()
  afterEach(closeAll)
  after(() => temp.cleanup())

  it('runs migrations once and applies only new ones on a later open', async function () {
    const dir = await temp.make()
    await (await openDb(dir)).close()
    const second: Migration = { version: 2, name: 'tags', up: 'CREATE TABLE tags (name TEXT PRIMARY KEY)' }
    const db = await openDb(dir, { migrations: [itemsMigration, second] })
    expect(db.all('SELECT version, name FROM schema_migrations ORDER BY version')).to.deep.equal([
      { version: 1, name: 'items' },
      { version: 2, name: 'tags' },
    ])
    await db.close()
    const again = await openDb(dir, { migrations: [itemsMigration, second] })
    expect(again.get('SELECT COUNT(*) AS n FROM schema_migrations')).to.deep.equal({ n: 2 })
    expect(again.stats().lastSeq).to.equal(2)
    await again.close()
    const err = await Database.open({ dir, migrations: [itemsMigration] }).catch((e: unknown) => e)
    expect((err as DatabaseError).code).to.equal('DB_MIGRATION')
  })

  it('replays the journal after a crash (no checkpoint, no close)', async function () {
    const dir = await temp.make()
    const db = await openDb(dir)
    await insertMany(db, 1, 300)
    await db.transaction((tx) => tx.run('DELETE FROM items WHERE id % 3 = 0'))
    await db.transaction((tx) => tx.run('UPDATE items SET name = :n WHERE id = :id', { ':n': 'renamed', ':id': 1 }))
    // Every value type goes through the journal's codec and back.
    await db.transaction((tx) => {
      tx.run('INSERT INTO items (id, name, data) VALUES (?, ?, ?)', [2n ** 40n, 'bigint', new Uint8Array([0, 255, 7])])
      tx.run('INSERT INTO items (id, name, data) VALUES (?, ?, ?)', [5000, 'ünïcødé ✓', 1.5])
      tx.run('INSERT INTO items (id, name, data) VALUES (?, ?, ?)', [5001, '', null])
      tx.get('INSERT INTO items (id, name) VALUES (?, ?) RETURNING id', [5002, 'returning'])
    })
    const expected = db.all('SELECT * FROM items ORDER BY id')
    const image = await temp.crashImage(dir)
    const { lines, log } = logCollector()
    const reopened = await openDb(image, { log })
    expect(reopened.all('SELECT * FROM items ORDER BY id')).to.deep.equal(expected)
    expect(reopened.stats().lastSeq).to.equal(db.stats().lastSeq)
    expect(lines.join('\n')).to.match(/replayed \d+ transactions/)
  })

  it('cuts a torn tail (garbage, a partial frame) and keeps everything before it', async function () {
    const dir = await temp.make()
    const db = await openDb(dir)
    await insertMany(db, 1, 50)
    const goodSize = db.stats().journalBytes
    // A frame that only partly reached the disk: the next commit's bytes, cut in half.
    const withFrame = await temp.crashImage(dir)
    await insertMany(db, 51, 1)
    const full = await readFile(join(dir, 'journal'))
    const frame = full.subarray(goodSize)
    await appendFile(join(withFrame, 'journal'), frame.subarray(0, Math.floor(frame.length / 2)))
    // Pure garbage, and zeros (a size extended without its data).
    const withGarbage = await temp.crashImage(withFrame)
    await truncate(join(withGarbage, 'journal'), goodSize)
    await appendFile(join(withGarbage, 'journal'), Buffer.from('PLYR not a frame at all, just bytes'))
    const withZeros = await temp.crashImage(withGarbage)
    await truncate(join(withZeros, 'journal'), goodSize + 4096)

    for (const image of [withFrame, withGarbage, withZeros]) {
      const { lines, log } = logCollector()
      const r = await openDb(image, { log })
      expect(ids(r)).to.deep.equal(range(1, 50))
      expect(lines.join('\n')).to.match(/torn tail/)
      expect((await stat(join(image, 'journal'))).size).to.equal(goodSize)
      // New commits go after the cut, and survive another crash.
      await insertMany(r, 51, 5)
      const again = await temp.crashImage(image)
      expect(ids(await openDb(again))).to.deep.equal(range(1, 55))
    }
  })

  it('refuses a journal damaged in the middle, and repairs it only when asked', async function () {
    const dir = await temp.make()
    const db = await openDb(dir)
    await insertMany(db, 1, 10)
    const cut = db.stats().journalBytes
    await insertMany(db, 11, 10)
    const image = await temp.crashImage(dir)
    const buf = await readFile(join(image, 'journal'))
    buf[cut - 3] = (buf[cut - 3] ?? 0) ^ 0xff // inside the last frame of the first batch
    await writeFile(join(image, 'journal'), buf)

    const err = await Database.open({ dir: image, migrations: [itemsMigration] }).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(DatabaseError)
    expect((err as DatabaseError).code).to.equal('DB_CORRUPT')
    expect((err as DatabaseError).message).to.match(/valid data after it/)

    const { lines, log } = logCollector()
    const repaired = await openDb(image, { repairCorruptJournal: true, log })
    const kept = ids(repaired)
    expect(kept.length).to.be.below(10)
    expect(kept).to.deep.equal(range(1, kept.length))
    expect(lines.join('\n')).to.match(/repairing/)
    expect((await readdir(image)).some((f) => f.startsWith('journal.corrupt-'))).to.equal(true)
  })

  it('repairs a sealed journal damaged in the middle only when asked, setting aside the journal that follows it', async function () {
    const dir = await temp.make()
    // A checkpoint that never folds: the sealed journal stays, and later commits go to the new journal.
    const builder: SnapshotBuilder = async (_d, started) => {
      started()
      throw new Error('simulated build failure')
    }
    const db = await openDb(dir, { buildSnapshot: builder })
    await insertMany(db, 1, 10)
    await insertMany(db, 11, 10)
    const cut = db.stats().journalBytes
    await insertMany(db, 21, 10)
    await db.checkpoint().catch(() => {})
    await insertMany(db, 31, 5)
    const image = await temp.crashImage(dir)
    const sealed = await readFile(join(image, 'journal.sealed'))
    sealed[cut - 3] = (sealed[cut - 3] ?? 0) ^ 0xff // inside the second batch's frame, with a valid frame after it
    await writeFile(join(image, 'journal.sealed'), sealed)

    const err = await Database.open({ dir: image, migrations: [itemsMigration] }).catch((e: unknown) => e)
    expect((err as DatabaseError).code).to.equal('DB_CORRUPT')
    expect((err as DatabaseError).message).to.match(/journal\.sealed file is damaged .* valid data after it/)
    expect((await readFile(join(image, 'journal.sealed'))).length, 'nothing cut without the repair').to.equal(sealed.length)

    // A repair that crashed after setting the journal aside and before cutting the sealed file: opened again, the
    // repair picks up from there.
    const interrupted = await temp.crashImage(image)
    await writeFile(join(interrupted, 'journal'), (await readFile(join(image, 'journal'))).subarray(0, HEADER))

    const { lines, log } = logCollector()
    const repaired = await openDb(image, { repairCorruptJournal: true, log })
    const kept = ids(repaired)
    expect(kept).to.deep.equal(range(1, 10))
    expect(ids(await openDb(interrupted, { repairCorruptJournal: true }))).to.deep.equal(kept)
    expect(lines.join('\n')).to.match(/repairing/).and.match(/journal holds only transactions after those cut from journal\.sealed; set aside/)
    const files = await readdir(image)
    expect(files.some((f) => f.startsWith('journal.sealed.corrupt-'))).to.equal(true)
    expect(files.some((f) => /^journal\.corrupt-/.test(f))).to.equal(true)
    // It goes on from there, and opens again without the repair option.
    await insertMany(repaired, 100, 3)
    await repaired.close()
    expect(ids(await openDb(image))).to.deep.equal([...kept, 100, 101, 102])
  })

  it('checkpoints past the threshold, then replays later writes on top of the snapshot', async function () {
    const dir = await temp.make()
    const db = await openDb(dir, { checkpointBytes: 16 * 1024 })
    await insertMany(db, 1, 1000, 10)
    await db.checkpoint() // deterministic point: the journal is now empty and every build has finished
    expect(db.stats().checkpoints).to.be.at.least(1)
    expect(db.stats().journalBytes).to.equal(HEADER)
    await insertMany(db, 1001, 20)
    // Cached statements and connection settings survive the export.
    expect(db.get('PRAGMA foreign_keys')).to.deep.equal({ foreign_keys: 1 })
    const image = await temp.crashImage(dir)
    const reopened = await openDb(image)
    expect(ids(reopened)).to.deep.equal(range(1, 1020))

    await db.close()
    expect((await stat(join(dir, 'journal'))).size).to.equal(HEADER)
    expect(ids(await openDb(dir))).to.deep.equal(range(1, 1020))
  })

  it('skips journal records a snapshot already includes (crash before the journal was swapped)', async function () {
    const dir = await temp.make()
    const db = await openDb(dir)
    await insertMany(db, 1, 30)
    const image = await temp.crashImage(dir)
    const oldJournal = join(image, 'journal.old')
    await copyFile(join(dir, 'journal'), oldJournal)
    await db.checkpoint()
    await insertMany(db, 31, 5)
    // The new snapshot reached the disk but the old journal was still in place: append the new commits
    // to it so it holds records both before and after the snapshot's sequence number.
    await copyFile(join(dir, 'snapshot.sqlite'), join(image, 'snapshot.sqlite'))
    const newRecords = (await readFile(join(dir, 'journal'))).subarray(HEADER)
    await appendFile(oldJournal, newRecords)
    await copyFile(oldJournal, join(image, 'journal'))
    expect(ids(await openDb(image))).to.deep.equal(range(1, 35))
  })

  it('recovers from a crash at each step of a checkpoint: rotated, built, renamed, removed, and with stray tmp files', async function () {
    const dir = await temp.make()
    const images: Record<string, string> = {}
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    let imaged: () => void = () => {}
    const buildWaiting = new Promise<void>((resolve) => (imaged = resolve))
    // Runs the real build in this thread, pausing before it and taking crash images around it.
    const builder: SnapshotBuilder = async (d, started) => {
      started()
      images['rotated, build not started'] = await temp.crashImage(d)
      imaged()
      await gate
      const built = await buildSnapshot(d)
      images['snapshot renamed, sealed journal not removed'] = await temp.crashImage(d)
      return built
    }
    const { lines, log } = logCollector()
    const db = await openDb(dir, { buildSnapshot: builder, log })
    await insertMany(db, 1, 30)
    const checkpoint = db.checkpoint()
    await buildWaiting
    // The build is waiting: commits go to the new journal meanwhile.
    await insertMany(db, 31, 10)
    expect(existsSync(join(dir, 'journal.sealed'))).to.equal(true)
    images['rotated, commits in the new journal'] = await temp.crashImage(dir)
    release()
    await checkpoint
    await insertMany(db, 41, 5)
    images['done'] = await temp.crashImage(dir)
    expect(lines.join('\n')).to.match(/rotated seq=\d+/).and.match(/worker started/).and.match(/snapshot renamed/).and.match(/old journal removed/)

    // Between the rotation's two renames: the sealed journal, no journal, and the empty one as journal.tmp.
    const between = await temp.crashImage(images['rotated, build not started'] as string)
    await rename(join(between, 'journal'), join(between, 'journal.tmp'))
    images['between the two renames'] = between
    // Leftovers of interrupted writes: ignored and removed.
    const stray = await temp.crashImage(images['rotated, commits in the new journal'] as string)
    await writeFile(join(stray, 'snapshot.tmp'), 'half a snapshot')
    await writeFile(join(stray, 'journal.tmp'), 'PRLYJNL2')
    images['stray tmp files'] = stray

    const expected: Record<string, number> = {
      'rotated, build not started': 30,
      'between the two renames': 30,
      'rotated, commits in the new journal': 40,
      'stray tmp files': 40,
      'snapshot renamed, sealed journal not removed': 40,
      done: 45,
    }
    for (const [what, image] of Object.entries(images)) {
      const rec = logCollector()
      const r = await openDb(image, { log: rec.log })
      expect(ids(r), what).to.deep.equal(range(1, expected[what] ?? -1))
      expect(existsSync(join(image, 'snapshot.tmp')), what).to.equal(false)
      expect(existsSync(join(image, 'journal.tmp')), what).to.equal(false)
      // A sealed journal the snapshot already holds is removed at open; one it lacks is folded by the next checkpoint.
      if (what === 'snapshot renamed, sealed journal not removed') expect(existsSync(join(image, 'journal.sealed'))).to.equal(false)
      if (existsSync(join(image, 'journal.sealed'))) {
        expect(rec.lines.join('\n'), what).to.match(/had not finished folding journal\.sealed/)
        await r.checkpoint()
        expect(existsSync(join(image, 'journal.sealed')), what).to.equal(false)
      }
      await insertMany(r, 1000, 1)
      await r.close()
      const again = await openDb(image)
      expect(ids(again), what).to.deep.equal([...range(1, expected[what] ?? -1), 1000])
    }
  })

  it('keeps the sealed journal when the build fails (worker crash, out of memory), and the next checkpoint retries', async function () {
    const dir = await temp.make()
    let failing = true
    const builder: SnapshotBuilder = async (d, started) => {
      started()
      if (failing) throw new Error('checkpoint worker crashed: simulated out of memory')
      return buildSnapshot(d)
    }
    const { lines, log } = logCollector()
    const db = await openDb(dir, { buildSnapshot: builder, log })
    await insertMany(db, 1, 20)
    const err = await db.checkpoint().catch((e: unknown) => e)
    expect((err as Error).message).to.match(/simulated out of memory/)
    expect(lines.join('\n')).to.match(/building the snapshot failed, keeping journal\.sealed .*simulated out of memory/)
    expect(existsSync(join(dir, 'journal.sealed'))).to.equal(true)
    await insertMany(db, 21, 5)
    expect(ids(await openDb(await temp.crashImage(dir)))).to.deep.equal(range(1, 25))

    failing = false
    await db.checkpoint()
    expect(existsSync(join(dir, 'journal.sealed'))).to.equal(false)
    expect(db.stats().checkpoints).to.equal(2)
    expect(db.stats().journalBytes).to.equal(HEADER)
    expect(ids(await openDb(await temp.crashImage(dir)))).to.deep.equal(range(1, 25))
  })

  it('waits at close for a checkpoint that is building', async function () {
    const dir = await temp.make()
    let finished = false
    const builder: SnapshotBuilder = async (d, started) => {
      started()
      await new Promise((r) => setTimeout(r, 200))
      const built = await buildSnapshot(d)
      finished = true
      return built
    }
    const db = await Database.open({ dir, migrations: [itemsMigration], buildSnapshot: builder, checkpointBytes: 1024 })
    await insertMany(db, 1, 50)
    // Past the threshold: the loop has started a checkpoint by itself.
    await new Promise((r) => setTimeout(r, 20))
    await db.close()
    expect(finished).to.equal(true)
    expect(existsSync(join(dir, 'journal.sealed'))).to.equal(false)
    expect((await stat(join(dir, 'journal'))).size).to.equal(HEADER)
    expect(ids(await openDb(dir))).to.deep.equal(range(1, 50))
  })

  it('refuses a journal that starts after the snapshot ends (missing transactions)', async function () {
    const dir = await temp.make()
    const db = await openDb(dir)
    await insertMany(db, 1, 5)
    await db.checkpoint()
    await insertMany(db, 6, 5)
    const image = await temp.crashImage(dir)
    await writeFile(join(image, 'snapshot.sqlite'), '')
    const err = await Database.open({ dir: image, migrations: [itemsMigration] }).catch((e: unknown) => e)
    expect((err as DatabaseError).code).to.equal('DB_CORRUPT')
  })

  it('fails closed when the journal cannot be synced', async function () {
    const dir = await temp.make()
    let failing = false
    const wrapJournal = (sink: JournalSink): JournalSink => ({
      get size() {
        return sink.size
      },
      append: (chunks) => (failing ? Promise.reject(new Error('EIO: simulated fdatasync failure')) : sink.append(chunks)),
      close: () => sink.close(),
    })
    const db = await openDb(dir, { wrapJournal })
    await insertMany(db, 1, 3)
    failing = true
    const pending = [1, 2, 3].map((i) => db.transaction((tx) => tx.run('INSERT INTO items (id, name) VALUES (?, ?)', [100 + i, `x${i}`])))
    const results = await Promise.allSettled(pending)
    for (const r of results) {
      expect(r.status).to.equal('rejected')
      expect(((r as PromiseRejectedResult).reason as DatabaseError).code).to.equal('DB_FAILED')
    }
    const later = await db.transaction((tx) => tx.run('DELETE FROM items')).catch((e: unknown) => e)
    expect((later as DatabaseError).code).to.equal('DB_FAILED')
    // Reads still answer; a restart recovers what was durable.
    expect(db.get('SELECT COUNT(*) AS n FROM items')).to.deep.equal({ n: 6 })
    await db.close()
    expect(ids(await openDb(dir))).to.deep.equal([1, 2, 3])
  })
})
