import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { assertPortFree, isAlive, PortBusyError, processMemory, signalPid, spawnLogged, stopPid, waitFor } from '../../../network/process.js'

/** Starting a logged process, stopping one that ignores SIGTERM, waiting with a reason: network/process.ts. */
describe('network/process: a process\'s life', () => {
  let dir: string
  const started: number[] = []

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'process-'))
  })

  afterEach(async () => {
    for (const pid of started.splice(0)) await stopPid(pid, 0, 'SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  it('starts a process in its own group, appending its output to its log with the environment given, and answers its exit code', async () => {
    const logFile = join(dir, 'logs', 'p.log')
    const p = spawnLogged({ name: 'p', command: 'sh', args: ['-c', 'echo "$GREETING from $(pwd)"; exit 3'], logFile, env: { GREETING: 'hello' }, cwd: dir })
    started.push(p.pid)
    expect(await p.exited).to.equal(3)
    const again = spawnLogged({ name: 'p', command: 'sh', args: ['-c', 'echo again'], logFile })
    started.push(again.pid)
    expect(await again.exited).to.equal(0)
    expect(readFileSync(logFile, 'utf8')).to.equal(`hello from ${dir}\nagain\n`)
  })

  it('refuses a command that cannot be run, and lives on', async () => {
    expect(() => spawnLogged({ name: 'ghost', command: join(dir, 'no-such-program'), args: [], logFile: join(dir, 'ghost.log') })).to.throw(`could not start ghost (${join(dir, 'no-such-program')})`)
    // The child's error event comes a tick later: unhandled, it would end this process.
    await new Promise((resolve) => setTimeout(resolve, 50))
  })

  it('stops a process that ignores SIGTERM with SIGKILL once the grace has passed', async () => {
    const child = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => {}); console.log('ready'); setInterval(() => {}, 1000)"], { stdio: ['ignore', 'pipe', 'ignore'] })
    started.push(child.pid!)
    await new Promise((resolve) => child.stdout!.once('data', resolve))
    signalPid(child.pid!, 'SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(isAlive(child.pid!)).to.equal(true)
    await stopPid(child.pid!, 100)
    expect(isAlive(child.pid!)).to.equal(false)
    // A process that has gone is no error to signal or stop.
    signalPid(child.pid!, 'SIGTERM')
    await stopPid(child.pid!)
  })

  it('times out a wait naming what it waited for and the check\'s last failure', async () => {
    let tries = 0
    const failing = waitFor('the moon', () => {
      tries++
      throw new Error('still night')
    }, { timeoutMs: 30, intervalMs: 5 })
    await failing.then(
      () => expect.fail('the wait did not time out'),
      (err: Error) => expect(err.message).to.equal('timed out after 30 ms waiting for the moon: still night'),
    )
    expect(tries).to.be.above(1)
    await waitFor('nothing', () => false, { timeoutMs: 10, intervalMs: 5 }).then(
      () => expect.fail('the wait did not time out'),
      (err: Error) => expect(err.message).to.equal('timed out after 10 ms waiting for nothing'),
    )
    let n = 0
    await waitFor('the third try', async () => ++n === 3, { intervalMs: 1 })
    expect(n).to.equal(3)
  })

  it('passes on a failure to listen that is not a busy port', async () => {
    // 192.0.2.1 (TEST-NET-1) is no address of this machine.
    const err = await assertPortFree(20_000, 'test', '192.0.2.1').then(() => undefined, (e: NodeJS.ErrnoException) => e)
    expect(err).not.to.be.instanceOf(PortBusyError)
    expect(err?.code).to.equal('EADDRNOTAVAIL')
  })

  it('reads a process\'s resident memory and its peak', () => {
    const { rss, hwm } = processMemory(process.pid)
    expect(rss).to.be.above(1024 * 1024)
    expect(hwm).to.be.at.least(rss)
  })
})
