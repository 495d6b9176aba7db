import { expect } from 'chai'
import { DATABASE_LIMIT_BYTES, DATABASE_WARN_AT, databaseCapacity } from '../../../../node/db/capacity.js'
import type { DatabaseStats } from '../../../../node/db/types.js'

const stats = (databaseBytes: number): DatabaseStats => ({
  journalBytes: 1234,
  lastSeq: 1,
  durableSeq: 1,
  checkpoints: 0,
  flushes: 1,
  pendingCommits: 0,
  lastCheckpointMs: null,
  lastCheckpointExportMs: null,
  lastSnapshotBytes: null,
  databaseBytes,
})

describe('database capacity (what an in-memory member can hold)', () => {
  it('reports size, limit and share, with no warning well below the limit', () => {
    const c = databaseCapacity(stats(DATABASE_LIMIT_BYTES / 4))
    expect(c).to.deep.equal({ bytes: DATABASE_LIMIT_BYTES / 4, limitBytes: DATABASE_LIMIT_BYTES, used: 0.25, journalBytes: 1234, lastCheckpointMs: null, lastCheckpointExportMs: null })
  })

  it('warns from the warning share on, naming the size and what to do', () => {
    expect(databaseCapacity(stats(Math.floor(DATABASE_LIMIT_BYTES * DATABASE_WARN_AT) - 1024 * 1024)).warning).to.equal(undefined)
    const c = databaseCapacity(stats(Math.ceil(DATABASE_LIMIT_BYTES * DATABASE_WARN_AT)))
    expect(c.warning).to.match(/holds 720 MiB of the 900 MiB an in-memory \(sql\.js\) member can keep; start a member with a new state folder/)
  })
})
