import { expect } from 'chai'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Database } from '../../node/db/database.js'
import { TempDirs } from '../support/db/helpers.js'
import { fillMessages, INSERT_MESSAGE, messageRow, messagesMigration } from '../support/db/messages-load.js'

/**
 * The point of the journal: a commit costs the same on a big database as on a small one, because it appends the
 * transaction's statements instead of rewriting the database. Asserted by what a commit writes: the same bytes to the
 * journal at 20 times the rows, and nothing to any other file of the database's folder. What a commit takes in milliseconds at 1k and 100k rows
 * is measured by `npm run bench -- --only db` (scripts/bench/db.ts).
 */

/** A key of fixed length that sorts anywhere in the B-tree: row i has the same size in both databases. */
const keyOf = (i: number, db: string): string => `${((i * 2_654_435_761) % 4_294_967_296).toString(16).padStart(8, '0')}-${db}-${String(i).padStart(8, '0')}`
const row = (i: number, db: string): ReturnType<typeof messageRow> => messageRow(keyOf(i, db), i)
const fill = (db: Database, name: string, rows: number): Promise<void> => fillMessages(db, rows, (i) => keyOf(i, name))

/** Journal bytes each of `n` sequential single-row commits appended, rows numbered from `first`. */
async function journalBytesPerCommit(db: Database, name: string, first: number, n: number): Promise<number[]> {
  const grew: number[] = []
  for (let i = first; i < first + n; i++) {
    const before = db.stats().journalBytes
    await db.transaction((tx) => tx.run(INSERT_MESSAGE, row(i, name)))
    grew.push(db.stats().journalBytes - before)
  }
  return grew
}

describe('db: commit cost does not grow with the database', function () {
  this.timeout(60_000)
  const temp = new TempDirs()
  const dbs: Database[] = []
  after(async function () {
    await Promise.all(dbs.map((db) => db.close()))
    await temp.cleanup()
  })

  it('appends the same bytes per commit at 20k rows as at 1k rows to the journal, and writes no other file', async function () {
    const dirs = { small: await temp.make(), large: await temp.make() }
    // No checkpoint during the test: between two, a commit may only append to the journal.
    const small = await Database.open({ dir: dirs.small, migrations: [messagesMigration], checkpointBytes: 1024 ** 3 })
    const large = await Database.open({ dir: dirs.large, migrations: [messagesMigration], checkpointBytes: 1024 ** 3 })
    dbs.push(small, large)
    await fill(small, 'small', 1_000)
    await fill(large, 'large', 20_000)
    // The first commits of a journal define their statements; the ones after refer to them.
    await journalBytesPerCommit(small, 'small', 1_000_000, 5)
    await journalBytesPerCommit(large, 'large', 1_000_000, 5)
    /** Every file of the folder but the journal, with its size and time of last change. */
    const others = (dir: string): Record<string, { size: number; mtimeMs: number }> =>
      Object.fromEntries(
        readdirSync(dir)
          .filter((f) => f !== 'journal')
          .map((f) => [f, { size: statSync(join(dir, f)).size, mtimeMs: statSync(join(dir, f)).mtimeMs }]),
      )
    const othersBefore = { small: others(dirs.small), large: others(dirs.large) }
    const journalBefore = statSync(join(dirs.large, 'journal')).size
    const largeBytesBefore = large.stats().databaseBytes

    const atSmall = await journalBytesPerCommit(small, 'small', 2_000_000, 200)
    const atLarge = await journalBytesPerCommit(large, 'large', 2_000_000, 200)

    expect(large.get('SELECT COUNT(*) AS n FROM messages')?.['n']).to.equal(20_205)
    expect(largeBytesBefore, 'the large database is many times the small one').to.be.above(small.stats().databaseBytes * 10)
    expect(atSmall.every((b) => b > 0 && b < 1024), `journal bytes per commit at 1k rows: ${atSmall.join(', ')}`).to.equal(true)
    expect(atLarge, 'journal bytes per commit, commit by commit, at 20k rows against 1k rows').to.deep.equal(atSmall)
    expect(statSync(join(dirs.large, 'journal')).size - journalBefore, 'the journal file grew by what the commits appended').to.equal(atLarge.reduce((a, b) => a + b, 0))
    expect({ small: others(dirs.small), large: others(dirs.large) }, 'the other files of the folders').to.deep.equal(othersBefore)
  })
})
