import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { projectRoot, stopPid } from '../../../../network/process.js'
import { bundledArgs } from '../../../support/bundled-entry.js'
import { acquireLock, LOCK_FILE } from '../../../../node/db/lock.js'
import { DatabaseError } from '../../../../node/db/errors.js'

/** A lock-racer child (test/support/db/fixtures/lock-racer.ts) and the lines it printed. */
interface Racer {
  proc: ChildProcess
  pid: number
  /** The first line not yet taken that starts with one of `prefixes`; an `error` line fails it. */
  next(...prefixes: string[]): Promise<string>
}

async function racer(): Promise<Racer> {
  const proc = spawn(process.execPath, await bundledArgs('test/support/db/fixtures/lock-racer.ts'), { cwd: projectRoot, stdio: ['pipe', 'pipe', 'pipe'] })
  if (proc.pid === undefined) throw new Error('could not start a lock racer')
  const lines: string[] = []
  const waiters: (() => void)[] = []
  let partial = ''
  let stderr = ''
  proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  proc.stdout?.on('data', (d: Buffer) => {
    const got = (partial + d.toString()).split('\n')
    partial = got.pop() ?? ''
    lines.push(...got)
    for (const w of waiters.splice(0)) w()
  })
  return {
    proc,
    pid: proc.pid,
    async next(...prefixes) {
      const deadline = Date.now() + 30_000
      for (;;) {
        const i = lines.findIndex((l) => prefixes.some((p) => l.startsWith(p)) || l.startsWith('error '))
        if (i >= 0) {
          const [line] = lines.splice(i, 1)
          if (line!.startsWith('error ')) throw new Error(line)
          return line!
        }
        if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`lock racer ${proc.pid} printed no "${prefixes.join('" or "')}" (stderr: ${stderr})`)
        await new Promise<void>((res) => {
          waiters.push(res)
          setTimeout(res, 200)
        })
      }
    },
  }
}

/** A PID that no process has: one of a process that has exited. */
async function deadPid(): Promise<number> {
  const p = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
  await new Promise((res) => p.once('exit', res))
  return p.pid!
}

describe('database folder lock', function () {
  this.timeout(120_000)
  const dirs: string[] = []
  const racers: Racer[] = []
  const tempDir = async (): Promise<string> => {
    const d = await mkdtemp(join(tmpdir(), 'parley-lock-'))
    dirs.push(d)
    return d
  }
  after(async () => {
    for (const r of racers) r.proc.stdin?.end()
    await Promise.all(racers.map((r) => stopPid(r.pid)))
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })))
  })

  /** Tells every racer to claim `dir` at once; returns the PIDs of the winners, after checking every racer answered. */
  async function race(dir: string): Promise<number[]> {
    for (const r of racers) r.proc.stdin!.write(`claim ${dir}\n`)
    const outcomes = await Promise.all(racers.map(async (r) => ({ pid: r.pid, line: await r.next(`won ${dir}`, `locked ${dir}`) })))
    return outcomes.filter((o) => o.line.startsWith('won ')).map((o) => o.pid)
  }

  async function releaseAll(): Promise<void> {
    for (const r of racers) r.proc.stdin!.write('release\n')
    await Promise.all(racers.map((r) => r.next('released')))
  }

  it('lets exactly one of several processes racing for a folder win, free or held by a dead process', async () => {
    racers.push(...(await Promise.all(Array.from({ length: 5 }, racer))))
    await Promise.all(racers.map((r) => r.next('ready')))
    const dead = await deadPid()
    const rounds: [string, string | undefined][] = [
      ['a free folder', undefined],
      ['a stale lock', `${dead} 0123456789abcdef01234567\n`],
      ['a stale lock in the one-line form', `${dead}\n`],
      ['an empty lock file', ''],
    ]
    for (const [what, stale] of rounds) {
      for (let round = 0; round < 2; round++) {
        const dir = await tempDir()
        if (stale !== undefined) await writeFile(join(dir, LOCK_FILE), stale)
        const winners = await race(dir)
        expect(winners, what).to.have.length(1)
        expect(Number.parseInt(await readFile(join(dir, LOCK_FILE), 'utf8'), 10), what).to.equal(winners[0])
        await releaseAll()
        // Nothing left behind: no lock, no claim on a stale one's removal, no file written on the way.
        expect(await readdir(dir), what).to.deep.equal([])
      }
    }
  })

  it('refuses a second claim in the same process, and frees the folder on release', async () => {
    const dir = await tempDir()
    const lock = await acquireLock(dir)
    const second = await acquireLock(dir).catch((e: unknown) => e)
    expect(second).to.be.instanceOf(DatabaseError).with.property('code', 'DB_LOCKED')
    await lock.release()
    await (await acquireLock(dir)).release()
    expect(await readdir(dir)).to.deep.equal([])
  })

  it('leaves alone a lock that another process took over after this one lost it', async () => {
    const dir = await tempDir()
    const lock = await acquireLock(dir)
    const other = `${process.pid + 1} feedfeedfeedfeedfeedfeed\n`
    await writeFile(join(dir, LOCK_FILE), other)
    await lock.release()
    expect(await readFile(join(dir, LOCK_FILE), 'utf8')).to.equal(other)
  })

  it('refuses a folder whose lock a live process holds, naming it, and leaves its lock as it was', async () => {
    const dir = await tempDir()
    // This process's parent is alive for as long as this test runs.
    const held = `${process.ppid} 00112233445566778899aabb\n`
    await writeFile(join(dir, LOCK_FILE), held)
    const err = await acquireLock(dir).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(DatabaseError).with.property('code', 'DB_LOCKED')
    expect((err as Error).message).to.equal(`DB_LOCKED: the database in ${dir} is in use by process ${process.ppid} (lock file ${join(dir, LOCK_FILE)})`)
    expect(await readFile(join(dir, LOCK_FILE), 'utf8')).to.equal(held)
    expect(await readdir(dir)).to.deep.equal([LOCK_FILE])
    // The refusal holds nothing here: once the lock is gone, this process takes the folder.
    await rm(join(dir, LOCK_FILE))
    await (await acquireLock(dir)).release()
  })

  it('takes over a lock this process left behind, or one whose text names no process', async () => {
    for (const stale of [`${process.pid} 0123456789abcdef01234567\n`, 'not a lock file']) {
      const dir = await tempDir()
      await writeFile(join(dir, LOCK_FILE), stale)
      const lock = await acquireLock(dir)
      expect(Number.parseInt(await readFile(join(dir, LOCK_FILE), 'utf8'), 10), stale).to.equal(process.pid)
      await lock.release()
      expect(await readdir(dir), stale).to.deep.equal([])
    }
  })
})
