import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { TempDirs } from '../../../support/db/helpers.js'
import { DEFAULT_PEER_QUOTAS, type NodeConfig } from '../../../../node/config.js'
import { openStore } from '../../../../node/startup/store.js'
import type { Hash } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'

describe('start-up: the store opens and sweeps blobs peers sent that nothing referred to in time', () => {
  const temp = new TempDirs()
  after(() => temp.cleanup())

  it('deletes, at start, an unreferenced received blob past quotas.unreferencedBlobMs, record and file; a recent one stays', async () => {
    const dataDir = await temp.make('parley-store-')
    const cfg = { dataDir, database: { type: 'sqljs' }, quotas: { ...DEFAULT_PEER_QUOTAS, unreferencedBlobMs: 3_600_000 } } as NodeConfig
    const lines: string[] = []
    const first = await openStore(cfg, (l) => lines.push(l))
    const put = async (text: string, received: number): Promise<Hash> => {
      const bytes = new TextEncoder().encode(text)
      const stored = await first.blobStore.write((async function* () { yield bytes })())
      await first.db.transaction((tx) => {
        first.repos.blobs.insert(tx, { hash: stored.hash, size: stored.size, created: now() })
        first.repos.receivedBlobs.insert(tx, { hash: stored.hash, org: 'org1', bytes: 65536, received })
      })
      return stored.hash
    }
    const old = await put('old', Date.now() - 2 * 3_600_000)
    const recent = await put('recent', Date.now())
    expect(old).to.equal(createHash('sha256').update('old').digest('hex'))
    await first.db.close()

    const again = await openStore(cfg, (l) => lines.push(l))
    try {
      expect(again.repos.blobs.has(old)).to.equal(false)
      expect(again.repos.blobs.has(recent)).to.equal(true)
      expect((await readdir(join(dataDir, 'blobs'))).filter((f) => f !== 'tmp')).to.deep.equal([recent])
      expect(again.unreferencedBlobs.usedBy('org1')).to.equal(65536)
      expect(lines.some((l) => l.includes('(quotas.unreferencedBlobMs)'))).to.equal(true)
    } finally {
      await again.db.close()
    }
  })
})
