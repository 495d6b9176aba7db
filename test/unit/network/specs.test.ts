import { expect } from 'chai'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { spawnLogged } from '../../../network/process.js'
import { waitProcessReady } from '../../../network/specs.js'
import { tempDir } from '../../support/network.js'

describe('network/specs: waiting for a process to be ready', function () {
  let dir: string
  beforeEach(() => (dir = tempDir('specs')))
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('fails as soon as the process exits, with its exit code and the end of its log, not at the deadline', async function () {
    const p = spawnLogged({ name: 'quitter', command: process.execPath, args: ['-e', 'console.error("cannot start: port taken"); process.exit(3)'], logFile: join(dir, 'quitter.log') })
    const err = await waitProcessReady(p, 'the quitter', 600_000, async () => false, 20).then(
      () => expect.fail('ready'),
      (e: Error) => e,
    )
    expect(err.message).to.match(/^the quitter exited \(code 3\)/)
    expect(err.message).to.include('cannot start: port taken')
  })

  it('resolves once the check passes', async function () {
    const p = spawnLogged({ name: 'sleeper', command: process.execPath, args: ['-e', 'setTimeout(() => {}, 60_000)'], logFile: join(dir, 'sleeper.log') })
    try {
      let polls = 0
      await waitProcessReady(p, 'the sleeper', 600_000, async () => ++polls === 3, 10)
      expect(polls).to.equal(3)
    } finally {
      process.kill(p.pid, 'SIGKILL')
      await p.exited
    }
  })
})
