import { join } from 'node:path'
import type { NodeConfig } from '../config.js'
import type { Database } from '../db/database.js'
import { openDatabase } from '../db/open.js'
import { migrations } from '../db/schema/index.js'
import { DATABASE_LIMIT_BYTES, StorageGate } from '../db/capacity.js'
import { openRepositories, type Repositories } from '../db/repos/index.js'
import { BlobStore } from '../data/blob-store.js'
import { UnreferencedBlobs } from '../data/unreferenced-blobs.js'

/** What the node keeps on disk: the database (journaled), its repositories, and the blob files beside it. */
export interface NodeStore {
  db: Database
  repos: Repositories
  /** The database's ceiling and the disk's room, for new sends and uploads and for /status. */
  gate: StorageGate
  blobStore: BlobStore
  /** The quota on blobs peers sent that no message refers to, per org: counted here, swept now and then. */
  unreferencedBlobs: UnreferencedBlobs
}

/**
 * Start-up phase 1: opens the member's durable state, before anything that could write to it exists. The database
 * replays its journal and takes its folder's lock; blobs peers sent that no message referred to within their time
 * (`quotas.unreferencedBlobMs`) are deleted, and the blob folder loses files no data item holds. If the blob
 * store cannot open, the database is closed again, so a failed start leaves the folder unlocked.
 */
export async function openStore(cfg: NodeConfig, log: (line: string) => void): Promise<NodeStore> {
  const db = await openDatabase(cfg.database, { dataDir: cfg.dataDir, migrations, log, ...(cfg.dbTemplate !== undefined ? { template: cfg.dbTemplate } : {}) })
  try {
    // The ceiling is sql.js's (its database lives in the process's memory); PostgreSQL has none of its own.
    const gate = new StorageGate(db, log, db.dialect.engine === 'sqljs' ? DATABASE_LIMIT_BYTES : Infinity)
    const repos = openRepositories(db)
    const blobStore = await BlobStore.open(join(cfg.dataDir, 'blobs'))
    const { blobs, receivedBlobs } = repos
    const unreferencedBlobs = new UnreferencedBlobs({ db, blobs, received: receivedBlobs, blobStore, limitBytes: cfg.quotas.unreferencedBlobBytesPerOrg, keepMs: cfg.quotas.unreferencedBlobMs, log })
    await unreferencedBlobs.sweep()
    const swept = await blobStore.sweep((hash) => repos.blobs.has(hash))
    if (swept > 0) log(`blobs: removed ${swept} blob file(s) that no data item holds (uploads refused after their blob was written)`)
    return { db, repos, gate, blobStore, unreferencedBlobs }
  } catch (err) {
    await db.close()
    throw err
  }
}
