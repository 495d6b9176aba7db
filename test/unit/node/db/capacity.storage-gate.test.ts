import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StorageGate, type CapacitySource } from '../../../../node/db/capacity.js'
import type { DiskFull } from '../../../../node/db/disk-full.js'
import type { DatabaseStats } from '../../../../node/db/types.js'
import type { Database } from '../../../../node/db/database.js'
import { isParleyError, type ParleyError } from '../../../../node/core/errors.js'
import { HTTP_STATUS } from '../../../../node/api/errors.js'
import { startApiServer, type ApiServer } from '../../../../node/api/server.js'
import { DEFAULT_REQUEST_LIMITS } from '../../../../node/core/limits.js'
import type { NodeServices } from '../../../../node/services.js'
import { MessageSender } from '../../../../node/messaging/sender.js'
import { DataUploader } from '../../../../node/data/upload.js'
import { BlobStore } from '../../../../node/data/blob-store.js'
import { DataValidatorImpl } from '../../../../node/data/validator.js'
import { Confirmations } from '../../../../node/events/confirmations.js'
import { Aggregator } from '../../../../node/aggregator/aggregator.js'
import { freePort } from '../../../../network/process.js'
import { localIdentity } from '../../../../node/model/index.js'
import { openRepos, registerOrg, type Repos } from '../../../support/repos.js'
import { peerBatch } from '../../../support/peer-batch.js'

const MiB = 1024 * 1024

function stats(databaseBytes: number): DatabaseStats {
  return { journalBytes: 0, lastSeq: 0, durableSeq: 0, checkpoints: 0, flushes: 0, pendingCommits: 0, lastCheckpointMs: null, lastCheckpointExportMs: null, lastSnapshotBytes: null, databaseBytes }
}

/** A database as the gate sees it: a size and a disk condition, set by the test. */
class Source implements CapacitySource {
  bytes = 0
  diskFull: DiskFull | undefined
  stats(): DatabaseStats {
    return stats(this.bytes)
  }
}

function refusal(f: () => void): ParleyError {
  try {
    f()
  } catch (err) {
    expect(isParleyError(err, 'STORAGE_FULL'), String(err)).to.equal(true)
    return err as ParleyError
  }
  throw new Error('expected STORAGE_FULL')
}

describe('storage gate: the database ceiling and a full disk', () => {
  it('admits below the ceiling, warns once when crossing 80 %, and refuses (507) at the ceiling, naming size and limit', () => {
    const src = new Source()
    const lines: string[] = []
    const gate = new StorageGate(src, (l) => lines.push(l), 100 * MiB)

    src.bytes = 79 * MiB
    gate.admit()
    expect(gate.status().storage).to.deep.equal({ condition: 'ok' })
    expect(lines).to.deep.equal([])

    src.bytes = 80 * MiB
    for (let i = 0; i < 5; i++) gate.admit()
    gate.status()
    expect(lines).to.have.length(1)
    expect(lines[0]).to.match(/^database: the database holds 80 MiB of the 100 MiB an in-memory \(sql\.js\) member can keep/)
    expect(gate.status().capacity.warning).to.be.a('string')

    src.bytes = 100 * MiB
    const e = refusal(() => gate.admit())
    expect(HTTP_STATUS[e.code]).to.equal(507)
    expect(e.message).to.include(`${100 * MiB} bytes (100 MiB)`)
    expect(e.message).to.include(`the ${100 * MiB} bytes (100 MiB) an in-memory member can keep`)
    refusal(() => gate.admit())
    const full = gate.status().storage
    expect(full.condition).to.equal('full')
    expect(full.since).to.match(/^\d{4}-\d{2}-\d{2}T/)
    expect(lines.slice(1)).to.have.length(1)
    expect(lines[1]).to.match(/^database: at its ceiling \(100 MiB of 100 MiB\): new sends and uploads are refused/)

    // Back below (a checkpoint's VACUUM, an operator's cleanup): accepted again, said once.
    src.bytes = 85 * MiB
    gate.admit()
    expect(gate.status().storage).to.deep.equal({ condition: 'ok' })
    expect(lines.slice(2)).to.have.length(1)
    expect(lines[2]).to.match(/back below the ceiling/)
    src.bytes = 10 * MiB
    gate.admit()
    expect(lines.slice(3)).to.have.length(1)
    expect(lines[3]).to.match(/back below 80 %/)
  })

  it('refuses while the disk is full, whatever the size, and reports the condition with its start', () => {
    const src = new Source()
    const gate = new StorageGate(src, () => {}, 100 * MiB)
    src.diskFull = { since: '2026-01-02T03:04:05Z', detail: 'ENOSPC: no space left on device, write' }
    const e = refusal(() => gate.admit())
    expect(e.message).to.match(/disk holding the database is full \(ENOSPC: no space left on device, write\) since 2026-01-02T03:04:05Z/)
    expect(gate.status().storage).to.deep.equal({ condition: 'disk-full', since: '2026-01-02T03:04:05Z', detail: 'the journal cannot be written: ENOSPC: no space left on device, write' })
    src.diskFull = undefined
    gate.admit()
  })
})

/**
 * The gate where the node puts it, over a real database whose ceiling is set a little above its size: an upload that
 * takes it past the ceiling is the last one accepted; then the API answers new sends and uploads 507 and stores
 * nothing of them, still answers reads, and the aggregator still confirms what a peer sends.
 */
describe('storage gate: a member at its ceiling', function () {
  const KEY = '0x' + 'aa'.repeat(20)
  const PEER_KEY = '0x' + 'bb'.repeat(20)
  let dir: string
  let repos: Repos
  let db: Database
  let api: ApiServer
  let limit: number
  const logs: string[] = []

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parley-ceiling-'))
    repos = await openRepos(join(dir, 'db'))
    db = repos.db
    await registerOrg(db, repos.identities, 'org0', KEY)
    await registerOrg(db, repos.identities, 'peer', PEER_KEY)
    const blobStore = await BlobStore.open(join(dir, 'blobs'))
    const validator = new DataValidatorImpl(() => undefined)
    limit = db.stats().databaseBytes + 256 * 1024
    const gate = new StorageGate(db, (l) => logs.push(l), limit)
    const sender = new MessageSender({ ...repos, self: localIdentity('org0', 'node0', KEY), sink: { accepted: () => {} }, validator, confirmations: new Confirmations(), gate })
    const services = {
      config: { limits: DEFAULT_REQUEST_LIMITS },
      query: { messages: repos.messages, data: repos.data },
      sender,
      uploader: new DataUploader({ db, data: repos.data, blobs: repos.blobs, blobStore, validator, gate }),
    } as unknown as NodeServices
    api = await startApiServer({ host: '127.0.0.1', port: await freePort(), services, log: (l) => logs.push(l) })
  })
  after(async () => {
    await api.close()
    await db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const post = (path: string, body: unknown) =>
    fetch(`${api.url}/api/v1/namespaces/default/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const count = () => ({
    messages: repos.messages.list({ namespace: 'default', limit: 1000, skip: 0 }).length,
    data: repos.data.list('default', { limit: 1000, skip: 0 }).length,
  })

  it('answers new sends and uploads 507 naming size and limit once past it, keeps nothing of them, and still serves reads', async () => {
    expect((await post('messages/broadcast', { data: [{ value: { n: 1 } }] })).status).to.equal(202)
    // Below the ceiling when it arrives, past it once stored.
    expect((await post('data', { value: 'x'.repeat(300 * 1024) })).status).to.equal(200)
    expect(db.stats().databaseBytes).to.be.at.least(limit)
    const before = count()

    for (const [path, body] of [
      ['messages/broadcast', { data: [{ value: { n: 2 } }] }],
      ['data', { value: { n: 3 } }],
    ] as const) {
      const res = await post(path, body)
      expect(res.status, path).to.equal(507)
      const { error } = (await res.json()) as { error: string }
      expect(error).to.match(new RegExp(`^STORAGE_FULL: the database holds \\d+ bytes \\(\\d+ MiB\\), at or past the ${limit} bytes`))
    }
    expect(count()).to.deep.equal(before)
    expect(logs.filter((l) => l.startsWith('database: at its ceiling'))).to.have.length(1)

    const read = await fetch(`${api.url}/api/v1/namespaces/default/messages`)
    expect(read.status).to.equal(200)
    expect((await read.json()) as unknown[]).to.have.length(before.messages)
  })

  it('keeps storing and confirming what a peer sends', async () => {
    expect(db.stats().databaseBytes).to.be.at.least(limit)
    const agg = new Aggregator({ ...repos, validator: new DataValidatorImpl(() => undefined), definitions: [], log: (l) => logs.push(l), onOutcome: () => {} })
    const batch = await peerBatch(repos, 'did:firefly:org/peer', PEER_KEY, 't1')
    agg.start()
    await agg.whenIdle()
    await agg.stop()
    expect(repos.messages.get(batch.messageId)?.state).to.equal('confirmed')
  })
})
