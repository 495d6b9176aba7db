/**
 * The database engine alone, in this process (the network idles meanwhile): what a commit costs on a big database
 * against a small one, and how long a checkpoint of a 100+ MiB database holds the event loop. test/db/commit-cost and
 * test/db/checkpoint-stall assert the behaviour behind these figures (a commit appends the same bytes whatever the
 * database's size; commits go on during a checkpoint) on small databases.
 */
import { randomUUID } from 'node:crypto'
import { mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { Database } from '../../node/db/database.js'
import { checkpointWhileCommitting, fillRows, rowsMigration } from '../../test/support/db/checkpoint-load.js'
import { fillMessages, INSERT_MESSAGE, messageRow, messagesMigration } from '../../test/support/db/messages-load.js'
import { round } from './stats.js'
import { throwIfAborted, type BenchContext, type Json, type Scenario } from './types.js'

const MiB = 1024 * 1024

/** Row i with a random primary key, so that inserts land all over the B-tree. */
const row = (i: number): ReturnType<typeof messageRow> => messageRow(randomUUID(), i)
const fill = (db: Database, rows: number): Promise<void> => fillMessages(db, rows, () => randomUUID())

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length

/** Until transaction() returned (the in-memory part), and until its promise resolved (plus the write and fdatasync). */
async function commitOnce(db: Database, i: number): Promise<{ syncMs: number; totalMs: number }> {
  const start = performance.now()
  const done = db.transaction((tx) => tx.run(INSERT_MESSAGE, row(i)))
  const syncMs = performance.now() - start
  await done
  return { syncMs, totalMs: performance.now() - start }
}

async function commitsPerSecond(db: Database, n: number): Promise<{ perSecond: number; flushes: number }> {
  const flushesBefore = db.stats().flushes
  const start = performance.now()
  await Promise.all(Array.from({ length: n }, (_, i) => db.transaction((tx) => tx.run(INSERT_MESSAGE, row(i)))))
  return { perSecond: n / ((performance.now() - start) / 1000), flushes: db.stats().flushes - flushesBefore }
}

/**
 * 500 single-row commits at 1k rows and at 100k rows, interleaved commit by commit (an fdatasync's latency on a shared
 * disk swings by several times from one second to the next), then 2,000 concurrent ones on each (group commit).
 */
async function commitCost(ctx: BenchContext, dir: string): Promise<{ [key: string]: Json }> {
  const small = await Database.open({ dir: join(dir, 'small'), migrations: [messagesMigration] })
  const large = await Database.open({ dir: join(dir, 'large'), migrations: [messagesMigration] })
  try {
    await fill(small, 1_000)
    const fillStart = performance.now()
    await fill(large, 100_000)
    const fillMs = performance.now() - fillStart
    throwIfAborted(ctx.signal)
    for (let i = 0; i < 50; i++) {
      await commitOnce(small, i)
      await commitOnce(large, i)
    }
    const s: { syncMs: number; totalMs: number }[] = []
    const l: { syncMs: number; totalMs: number }[] = []
    for (let i = 0; i < 500; i++) {
      // Alternate which goes first so neither always follows the other's fsync.
      if (i % 2 === 0) {
        s.push(await commitOnce(small, i))
        l.push(await commitOnce(large, i))
      } else {
        l.push(await commitOnce(large, i))
        s.push(await commitOnce(small, i))
      }
    }
    throwIfAborted(ctx.signal)
    const smallGroup = await commitsPerSecond(small, 2000)
    const largeGroup = await commitsPerSecond(large, 2000)
    const total = (xs: typeof s): number => mean(xs.map((x) => x.totalMs))
    const sync = (xs: typeof s): number => mean(xs.map((x) => x.syncMs))
    ctx.log(`filled 100k rows (~300 B each, random UUID key + index) in ${Math.round(fillMs)} ms`)
    ctx.log(`500 sequential single-row commits at   1k rows: mean ${total(s).toFixed(3)} ms/commit, in-memory part ${sync(s).toFixed(3)} ms`)
    ctx.log(`500 sequential single-row commits at 100k rows: mean ${total(l).toFixed(3)} ms/commit, in-memory part ${sync(l).toFixed(3)} ms`)
    ctx.log(`ratio 100k/1k: mean ${(total(l) / total(s)).toFixed(2)}, in-memory part ${(sync(l) / sync(s)).toFixed(2)}`)
    ctx.log(`2000 concurrent commits: ${Math.round(smallGroup.perSecond)}/s at 1k rows (${smallGroup.flushes} fsyncs), ${Math.round(largeGroup.perSecond)}/s at 100k rows (${largeGroup.flushes} fsyncs)`)
    return {
      commitMsAt1k: round(total(s), 3),
      commitMsAt100k: round(total(l), 3),
      inMemoryMsAt1k: round(sync(s), 3),
      inMemoryMsAt100k: round(sync(l), 3),
      ratio: round(total(l) / total(s), 2),
      inMemoryRatio: round(sync(l) / sync(s), 2),
      concurrentPerSecAt1k: Math.round(smallGroup.perSecond),
      concurrentPerSecAt100k: Math.round(largeGroup.perSecond),
    }
  } finally {
    await Promise.all([small.close(), large.close()])
  }
}

/** How long this thread waited for a core, in ms (Linux's /proc/thread-self/schedstat; 0 where it is missing). */
function runQueueWaitMs(): number {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]) / 1e6 || 0
  } catch {
    return 0
  }
}

/**
 * A checkpoint of a 105 MiB database while a loop commits one row after another: the event loop's worst delay (a
 * 1 ms histogram, and a 5 ms interval's drift, also without the time the thread waited for a core), and the commits
 * that went on meanwhile. An export on the main thread held the loop ~100 ms per 100 MiB.
 */
async function checkpointStall(ctx: BenchContext, dir: string): Promise<{ [key: string]: Json }> {
  // Only the explicit checkpoint below: the fill must not start one of its own.
  const db = await Database.open({ dir, migrations: [rowsMigration], checkpointBytes: 4096 * MiB })
  try {
    await fillRows(db, 105 * MiB, 10_000)
    throwIfAborted(ctx.signal)
    const sizeMiB = db.stats().databaseBytes / MiB
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
    const { during, checkpointMs: cpMs } = await checkpointWhileCommitting(db)
    clearInterval(ticker)
    histogram.disable()
    const s = db.stats()
    const histMax = histogram.max / 1e6
    ctx.log(
      `${sizeMiB.toFixed(0)} MiB database: checkpoint ${Math.round(cpMs)} ms, ${during} commits meanwhile; main thread blocked ${s.lastCheckpointBlockedMs?.toFixed(1)} ms; ` +
        `worst event-loop delay ${histMax.toFixed(1)} ms (histogram), ${worstDrift.toFixed(1)} ms (5 ms drift), ${worstOwnDrift.toFixed(1)} ms of it not waiting for a core`,
    )
    return {
      databaseMiB: round(sizeMiB, 0),
      checkpointMs: Math.round(cpMs),
      commitsDuring: during,
      blockedMs: round(s.lastCheckpointBlockedMs ?? NaN, 1),
      worstLoopDelayMs: round(histMax, 1),
      worstDriftMs: round(worstDrift, 1),
      worstOwnDriftMs: round(worstOwnDrift, 1),
    }
  } finally {
    await db.close()
  }
}

export const dbScenario: Scenario = {
  name: 'db',
  describe: 'the database alone: commit cost at 1k and 100k rows, and a 105 MiB checkpoint against the event loop',
  async run(ctx) {
    const dir = join(ctx.dir, 'bench-db')
    mkdirSync(dir, { recursive: true })
    try {
      const commit = await commitCost(ctx, join(dir, 'commit'))
      throwIfAborted(ctx.signal)
      const checkpoint = await checkpointStall(ctx, join(dir, 'checkpoint'))
      return { commitCost: commit, checkpointStall: checkpoint }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  },
}
