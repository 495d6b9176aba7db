import { expect } from 'chai'
import { randomUUID } from 'node:crypto'
import { Database, type Migration } from '../../node/db/database.js'
import { TempDirs } from '../support/db/helpers.js'

/**
 * The point of the journal: a commit costs the same on a big database as on a small one, because it
 * appends the transaction's statements instead of rewriting the database.
 *
 * A commit is mostly one fdatasync, whose latency on a shared disk swings by several times from one
 * second to the next. So the two databases are measured interleaved, commit by commit, and the
 * synchronous in-memory part (the only part that could depend on the database size) is reported apart.
 */

const messagesMigration: Migration = {
  version: 1,
  name: 'messages',
  up: `CREATE TABLE messages (
         id      TEXT PRIMARY KEY,
         author  TEXT NOT NULL,
         topic   TEXT NOT NULL,
         created TEXT NOT NULL,
         hash    TEXT NOT NULL,
         body    TEXT NOT NULL
       );
       CREATE INDEX messages_topic ON messages (topic, created);`,
}

const INSERT = 'INSERT INTO messages (id, author, topic, created, hash, body) VALUES (?, ?, ?, ?, ?, ?)'
const BODY = 'b'.repeat(140)

/** About 300 bytes per row, with a random primary key so inserts land all over the B-tree. */
function row(i: number): [string, string, string, string, string, string] {
  return [randomUUID(), `did:firefly:org/org${i % 3}`, `topic-${i % 50}`, new Date(1_700_000_000_000 + i).toISOString(), 'ab'.repeat(32), BODY]
}

async function fill(db: Database, rows: number): Promise<void> {
  const perTx = 5000
  for (let i = 0; i < rows; i += perTx) {
    await db.transaction((tx) => {
      for (let j = i; j < Math.min(i + perTx, rows); j++) tx.run(INSERT, row(j))
    })
  }
}

interface Sample {
  /** Until transaction() returned: BEGIN, insert, COMMIT, journal record built. */
  syncMs: number
  /** Until its promise resolved: the above plus the group commit's write + fdatasync. */
  totalMs: number
}

async function commitOnce(db: Database, i: number): Promise<Sample> {
  const start = performance.now()
  const done = db.transaction((tx) => tx.run(INSERT, row(i)))
  const syncMs = performance.now() - start
  await done
  return { syncMs, totalMs: performance.now() - start }
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

async function commitsPerSecond(db: Database, n: number): Promise<{ perSecond: number; flushes: number }> {
  const flushesBefore = db.stats().flushes
  const start = performance.now()
  await Promise.all(Array.from({ length: n }, (_, i) => db.transaction((tx) => tx.run(INSERT, row(i)))))
  return { perSecond: n / ((performance.now() - start) / 1000), flushes: db.stats().flushes - flushesBefore }
}

describe('db: commit cost does not grow with the database', function () {
  this.timeout(60_000)
  const temp = new TempDirs()
  const dbs: Database[] = []
  after(async function () {
    await Promise.all(dbs.map((db) => db.close()))
    await temp.cleanup()
  })

  it('commits as fast at 100k rows as at 1k rows', async function () {
    const small = await Database.open({ dir: await temp.make(), migrations: [messagesMigration] })
    const large = await Database.open({ dir: await temp.make(), migrations: [messagesMigration] })
    dbs.push(small, large)
    await fill(small, 1_000)
    const fillStart = performance.now()
    await fill(large, 100_000)
    const fillMs = performance.now() - fillStart

    const N = 500
    const s: Sample[] = []
    const l: Sample[] = []
    for (let i = 0; i < 50; i++) {
      await commitOnce(small, i) // warm-up: statement cache, page cache
      await commitOnce(large, i)
    }
    for (let i = 0; i < N; i++) {
      // Alternate which goes first so neither always follows the other's fsync.
      if (i % 2 === 0) {
        s.push(await commitOnce(small, i))
        l.push(await commitOnce(large, i))
      } else {
        l.push(await commitOnce(large, i))
        s.push(await commitOnce(small, i))
      }
    }
    const smallGroup = await commitsPerSecond(small, 2000)
    const largeGroup = await commitsPerSecond(large, 2000)

    const total = (xs: Sample[]): number[] => xs.map((x) => x.totalMs)
    const sync = (xs: Sample[]): number[] => xs.map((x) => x.syncMs)
    const fmt = (xs: Sample[]): string =>
      `mean ${mean(total(xs)).toFixed(3)} ms/commit (${Math.round(1000 / mean(total(xs)))} commits/s), median ${median(total(xs)).toFixed(3)} ms, ` +
      `in-memory part ${mean(sync(xs)).toFixed(3)} ms`
    console.log(`      filled 100k rows (~300 B each, random UUID key + index) in ${Math.round(fillMs)} ms`)
    console.log(`      ${N} sequential single-row commits at   1k rows: ${fmt(s)}`)
    console.log(`      ${N} sequential single-row commits at 100k rows: ${fmt(l)}`)
    console.log(`      ratio 100k/1k: mean ${(mean(total(l)) / mean(total(s))).toFixed(2)}, in-memory part ${(mean(sync(l)) / mean(sync(s))).toFixed(2)}`)
    console.log(`      2000 concurrent commits at   1k rows: ${Math.round(smallGroup.perSecond)} commits/s in ${smallGroup.flushes} fsync(s)`)
    console.log(`      2000 concurrent commits at 100k rows: ${Math.round(largeGroup.perSecond)} commits/s in ${largeGroup.flushes} fsync(s)`)

    expect(large.get('SELECT COUNT(*) AS n FROM messages')?.['n']).to.be.at.least(100_000)
    expect(mean(total(l))).to.be.below(mean(total(s)) * 3)
    expect(mean(sync(l))).to.be.below(mean(sync(s)) * 3)
  })
})
