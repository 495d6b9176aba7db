import { expect } from 'chai'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bytesUnder, readyTimeoutMs, REPLAY_BYTES_PER_SECOND } from '../../../network/readiness.js'

describe('readiness wait', () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-readiness-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('is the base wait for a process with nothing to replay (a new member, a folder not created yet)', () => {
    expect(readyTimeoutMs(60_000, [join(dir, 'missing')])).to.equal(60_000)
  })

  it('grows with the state a process replays at start-up, counted through sub-folders', () => {
    mkdirSync(join(dir, 'db', 'sub'), { recursive: true })
    writeFileSync(join(dir, 'db', 'snapshot.sqlite'), Buffer.alloc(REPLAY_BYTES_PER_SECOND))
    writeFileSync(join(dir, 'db', 'sub', 'journal'), Buffer.alloc(REPLAY_BYTES_PER_SECOND / 2))
    expect(bytesUnder(join(dir, 'db'))).to.equal(REPLAY_BYTES_PER_SECOND * 1.5)
    expect(readyTimeoutMs(60_000, [join(dir, 'db')])).to.equal(61_500)
  })
})
