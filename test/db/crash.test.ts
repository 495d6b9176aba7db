import { expect } from 'chai'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Database } from '../../node/db/database.js'
import { CrashChildren, TempDirs } from '../support/db/helpers.js'
import { crashMigrations } from '../support/db/fixtures/crash-schema.js'

/**
 * Real processes, real SIGKILL: a child commits inserts as fast as it can and prints each acknowledged
 * id; we kill it mid-stream and check, in this process, that every acknowledged id is in the database.
 */

interface Round {
  acked: number[]
  /** Checkpoints that had begun but not finished when the kill was sent. */
  checkpointInFlight: boolean
  checkpointsSeen: number
  /** The log line the kill was sent on (`killOnLog`). */
  killedOn?: string
}

const children = new CrashChildren()

async function runAndKill(
  dir: string,
  opts: {
    checkpointBytes: number
    concurrency: number
    filler: number
    killAfterAcks: number
    killOnCheckpoint: boolean
    killDelayMs?: number
    /** Kill on the first log line starting with this (once enough acks arrived) instead of at "checkpoint: begin". */
    killOnLog?: string
  },
): Promise<Round> {
  const round: Round = { acked: [], checkpointInFlight: false, checkpointsSeen: 0 }
  round.acked = await children.run('test/support/db/fixtures/insert-stream.ts', [dir, String(opts.checkpointBytes), String(opts.concurrency), String(opts.filler)], {
    line: (line, child) => {
      if (opts.killOnLog && !child.killed && line.startsWith(`log ${opts.killOnLog}`) && child.acked.length >= opts.killAfterAcks) {
        round.killedOn = line.slice(4)
        child.kill()
      }
      if (line.startsWith('log checkpoint: begin')) {
        round.checkpointInFlight = true
        round.checkpointsSeen++
        if (opts.killOnCheckpoint && !opts.killOnLog && child.acked.length >= opts.killAfterAcks) {
          // A delay moves the kill through the checkpoint's steps: rotation, the worker's build, rename, removal.
          if (opts.killDelayMs) setTimeout(() => child.kill(), opts.killDelayMs)
          else child.kill()
        }
      } else if (line.startsWith('log checkpoint: done')) round.checkpointInFlight = false
    },
    output: (child) => {
      if (!opts.killOnCheckpoint && child.acked.length >= opts.killAfterAcks) child.kill()
    },
  })
  return round
}

async function verify(dir: string, acked: readonly number[]): Promise<{ rows: number; maxAcked: number }> {
  const db = await Database.open({ dir, migrations: crashMigrations })
  try {
    const ids = db.all<{ id: number }>('SELECT id FROM items ORDER BY id').map((r) => r.id)
    const present = new Set(ids)
    const missing = acked.filter((id) => !present.has(id))
    expect(missing, `acknowledged ids missing after SIGKILL`).to.deep.equal([])
    // Commits are durable in commit order, so what survived is a prefix: 1..n with no holes.
    expect(ids[ids.length - 1]).to.equal(ids.length)
    return { rows: ids.length, maxAcked: Math.max(...acked) }
  } finally {
    await db.close()
  }
}

describe('db: crash durability (SIGKILL of a real process)', function () {
  this.timeout(60_000)
  const temp = new TempDirs()

  after(async function () {
    children.killAll()
    await temp.cleanup()
  })

  it('keeps every acknowledged insert when killed mid-stream', async function () {
    const dir = await temp.make()
    let total = 0
    for (let i = 0; i < 2; i++) {
      const round = await runAndKill(dir, { checkpointBytes: 64 * 1024 * 1024, concurrency: 8, filler: 0, killAfterAcks: 500, killOnCheckpoint: false })
      total += round.acked.length
      expect(round.acked.length).to.be.at.least(500)
      const { rows, maxAcked } = await verify(dir, round.acked)
      console.log(`      round ${i + 1}: ${round.acked.length} acks (max id ${maxAcked}), ${rows} rows after reopen`)
    }
    expect(total).to.be.at.least(1000)
  })

  it('keeps every acknowledged insert when killed during a checkpoint', async function () {
    const dir = await temp.make()
    let landedInside = 0
    for (const [i, killDelayMs] of [0, 5, 15, 30].entries()) {
      const round = await runAndKill(dir, { checkpointBytes: 256 * 1024, concurrency: 8, filler: 30_000, killAfterAcks: 300, killOnCheckpoint: true, killDelayMs })
      const phase = checkpointPhase(dir, round)
      if (round.checkpointInFlight) landedInside++
      const { rows, maxAcked } = await verify(dir, round.acked)
      console.log(
        `      round ${i + 1} (kill ${killDelayMs} ms after "checkpoint: begin"): ${round.acked.length} acks (max id ${maxAcked}), ` +
          `killed ${phase}, ${rows} rows after reopen`,
      )
    }
    expect(landedInside, 'at least one kill landed while a checkpoint was in progress').to.be.at.least(1)
  })

  it('keeps every acknowledged insert when killed at each step of a checkpoint (rotation, build, rename, removal)', async function () {
    const dir = await temp.make()
    const steps = ['checkpoint: rotated', 'checkpoint: worker started', 'checkpoint: snapshot renamed', 'checkpoint: old journal removed']
    for (const [i, step] of steps.entries()) {
      const round = await runAndKill(dir, {
        checkpointBytes: 256 * 1024,
        concurrency: 8,
        filler: 30_000,
        killAfterAcks: 300,
        killOnCheckpoint: true,
        killOnLog: step,
      })
      expect(round.killedOn, `the kill was sent on "${step}"`).to.be.a('string')
      const phase = checkpointPhase(dir, round)
      const { rows, maxAcked } = await verify(dir, round.acked)
      console.log(`      round ${i + 1} (kill on "${step}"): ${round.acked.length} acks (max id ${maxAcked}), left ${phase}, ${rows} rows after reopen`)
    }
  })
})

/** Where in the checkpoint the kill landed, judged from what it left on disk. */
function checkpointPhase(dir: string, round: Round): string {
  const files = ['journal.sealed', 'journal.tmp', 'snapshot.tmp'].filter((f) => existsSync(join(dir, f)))
  const left = files.length > 0 ? ` (${files.join(', ')} on disk)` : ''
  if (!round.checkpointInFlight) return `after the checkpoint finished${left}`
  if (existsSync(join(dir, 'snapshot.tmp'))) return `while the worker wrote/synced snapshot.tmp${left}`
  if (existsSync(join(dir, 'journal.tmp'))) return `while rotating the journal${left}`
  if (existsSync(join(dir, 'journal.sealed'))) return `while the sealed journal was being folded${left}`
  return 'inside the checkpoint, before the rotation or after the sealed journal was removed'
}
