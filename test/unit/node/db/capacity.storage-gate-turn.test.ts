import { expect } from 'chai'
import { StorageGate, type CapacitySource } from '../../../../node/db/capacity.js'
import type { DiskFull } from '../../../../node/db/disk-full.js'
import type { DatabaseStats } from '../../../../node/db/types.js'
import { isParleyError } from '../../../../node/core/errors.js'

const MiB = 1024 * 1024
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** A database whose size the test sets, counting how often the gate reads it. */
class CountingSource implements CapacitySource {
  bytes = 0
  reads = 0
  diskFull: DiskFull | undefined
  stats(): DatabaseStats {
    this.reads++
    return { journalBytes: 0, lastSeq: 0, durableSeq: 0, checkpoints: 0, flushes: 0, pendingCommits: 0, lastCheckpointMs: null, lastCheckpointExportMs: null, lastSnapshotBytes: null, databaseBytes: this.bytes }
  }
}

const refused = (gate: StorageGate): boolean => {
  try {
    gate.admit()
    return false
  } catch (err) {
    if (isParleyError(err, 'STORAGE_FULL')) return true
    throw err
  }
}

describe('storage gate: reading the size once per turn', () => {
  it('below the warning share, admits of one event-loop turn share one reading; the next turn reads again', async () => {
    const src = new CountingSource()
    const gate = new StorageGate(src, () => {}, 100 * MiB)
    src.bytes = 10 * MiB
    for (let i = 0; i < 10; i++) gate.admit()
    expect(src.reads).to.equal(1)
    await nextTurn()
    gate.admit()
    gate.admit()
    expect(src.reads).to.equal(2)
    // status() always reads.
    gate.status()
    expect(src.reads).to.equal(3)
  })

  it('refuses at the ceiling from the first admit of the next turn, and from the warning share on reads at every admit', async () => {
    const src = new CountingSource()
    const lines: string[] = []
    const gate = new StorageGate(src, (l) => lines.push(l), 100 * MiB)
    src.bytes = 10 * MiB
    gate.admit()
    src.bytes = 100 * MiB
    await nextTurn()
    expect(refused(gate)).to.equal(true)
    expect(lines).to.have.length(1)
    src.bytes = 90 * MiB
    const before = src.reads
    for (let i = 0; i < 3; i++) gate.admit()
    expect(src.reads - before).to.equal(3)
    src.bytes = 100 * MiB
    expect(refused(gate)).to.equal(true)
  })

  it('refuses while the disk is full even with a reading of this turn in hand', () => {
    const src = new CountingSource()
    const gate = new StorageGate(src, () => {}, 100 * MiB)
    gate.admit()
    src.diskFull = { since: '2026-01-02T03:04:05Z', detail: 'ENOSPC' }
    expect(refused(gate)).to.equal(true)
  })
})
