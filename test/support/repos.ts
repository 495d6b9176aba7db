import { Database } from '../../node/db/database.js'
import type { SnapshotBuilder } from '../../node/db/checkpoint.js'
import { buildSnapshot } from '../../node/db/snapshot-build.js'
import { migrations } from '../../node/db/schema/index.js'
import type { BlobRefsRepo } from '../../node/db/repos/blob-refs.js'
import type { IdentitiesRepo } from '../../node/db/repos/identities.js'
import { openRepositories, type Repositories } from '../../node/db/repos/index.js'
import { newId, type IdentityId, type MessageId } from '../../node/core/ids.js'
import { now } from '../../node/core/time.js'
import { TempDirs } from './db/helpers.js'

/** A node's database and every repository over it, as node/node.ts opens them (`refs` is `blobRefs`). */
export type Repos = Repositories & { db: Database; refs: BlobRefsRepo }

/**
 * Builds a checkpoint's snapshot on the calling thread. The database's close checkpoints; in its worker thread, which
 * loads tsx and SQLite of its own under the tests, that took about a second per test. A unit test's database is tiny,
 * and the worker is tested where checkpoints are (test/db).
 */
export const snapshotInThread: SnapshotBuilder = async (dir, started) => {
  started()
  return buildSnapshot(dir)
}

/** Opens a database with the node's schema in `dir` (snapshots built in-thread) and builds its repositories, as node/node.ts does. */
export async function openRepos(dir: string): Promise<Repos> {
  return reposOver(await Database.open({ dir, migrations, buildSnapshot: snapshotInThread }))
}

/**
 * Mocha hooks for a suite whose every test starts from an empty database: before each, one in a temporary folder,
 * handed to `use`; after each, closed and its folder removed.
 */
export function freshReposEachTest(use: (r: Repos) => void): void {
  const dirs = new TempDirs()
  let open: Repos | undefined
  beforeEach(async () => {
    open = await openRepos(await dirs.make())
    use(open)
  })
  afterEach(async () => {
    await open?.db.close()
    open = undefined
    await dirs.cleanup()
  })
}

/** Every repository over an open database (one opened with fault injection, say). */
export function reposOver(db: Database): Repos {
  const repos = openRepositories(db)
  return { ...repos, db, refs: repos.blobRefs }
}

/** Records an org and its signing key as registered, as its confirmed claim would. */
export async function registerOrg(db: Database, identities: IdentitiesRepo, name: string, key: string): Promise<void> {
  const id = newId<IdentityId>()
  await db.transaction((tx) => {
    identities.insert(tx, { id, did: `did:firefly:org/${name}`, type: 'org', namespace: 'svc_system', name, messages: { claim: newId<MessageId>() }, created: now() })
    identities.insertVerifier(tx, { identity: id, type: 'ethereum_address', value: key, created: now() })
  })
}

/**
 * Registers `n` orgs `org<i>`, each with a node `node<i>`, straight into the identities table (no claims on chain):
 * the members a group can be made of.
 */
export async function registerMembers(r: Repos, n: number): Promise<{ orgs: IdentityId[]; nodes: IdentityId[] }> {
  const orgs: IdentityId[] = []
  const nodes: IdentityId[] = []
  await r.db.transaction((tx) => {
    for (let i = 0; i < n; i++) {
      const org = newId<IdentityId>()
      const node = newId<IdentityId>()
      r.identities.insert(tx, { id: org, did: `did:firefly:org/org${i}`, type: 'org', namespace: 'svc_system', name: `org${i}`, messages: { claim: newId<MessageId>() }, created: now() })
      r.identities.insert(tx, { id: node, did: `did:firefly:node/node${i}`, type: 'node', parent: org, namespace: 'svc_system', name: `node${i}`, messages: { claim: newId<MessageId>() }, created: now() })
      orgs.push(org)
      nodes.push(node)
    }
  })
  return { orgs, nodes }
}
