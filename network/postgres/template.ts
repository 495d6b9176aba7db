import { createHash, randomBytes } from 'node:crypto'
import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, readdirSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs'
import { chown, open } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { RunAs } from './os-user.js'

/**
 * What a template depends on beyond the binaries: the superuser's name and initdb's options (cluster.ts). Changed with
 * them, so that no cluster is made from a template of other settings.
 */
const TEMPLATE_FORMAT = 'parley-1:scram-sha-256:UTF8:no-locale'

/**
 * Where this machine's account keeps a cluster fresh from initdb, to copy for each new network: initdb takes seconds
 * of CPU (3-6 s here under load), a copy a second. One per PostgreSQL build and initdb settings. The user's cache
 * folder rather than the package or the network's folder: shared by every network of the account, never by
 * another account.
 */
export function templateDir(postgresBin: string): string {
  const bin = realpathSync(postgresBin)
  const st = statSync(bin)
  const key = createHash('sha256').update(`${TEMPLATE_FORMAT}\n${bin}\n${st.size}\n${st.mtimeMs}`).digest('hex').slice(0, 16)
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'parley', `postgres-template-${key}`)
}

/**
 * Whether `dir` holds a template this process may trust: complete (PG_VERSION), and a folder of this account that
 * nobody else can write into (a cluster's configuration can run programs).
 */
export function usableTemplate(dir: string): boolean {
  try {
    const st = lstatSync(dir)
    return st.isDirectory() && st.uid === process.getuid?.() && (st.mode & 0o022) === 0 && existsSync(join(dir, 'PG_VERSION'))
  } catch {
    return false
  }
}

/**
 * Keeps a copy of a cluster initdb has just made (never started: nothing of a member in it) as the template; written
 * beside its final name and renamed into place, so that two starts at once leave one whole template. A failure to
 * keep it costs the next network its initdb, nothing else.
 */
export function saveTemplate(data: string, dir: string): void {
  const tmp = `${dir}.tmp-${randomBytes(4).toString('hex')}`
  try {
    mkdirSync(join(dir, '..'), { recursive: true, mode: 0o700 })
    cpSync(data, tmp, { recursive: true })
    chmodSync(tmp, 0o700)
    renameSync(tmp, dir)
  } catch {
    // Another start saved it first (the rename found it there), or the cache is not writable.
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
}

/**
 * Copies the template into `data` (which must not exist), owned by the server's account, every file fsynced: a
 * copy is only in the page cache until then, and a power cut would leave a cluster with holes where initdb's own
 * sync would not have.
 */
export async function copyTemplate(dir: string, data: string, account: RunAs): Promise<void> {
  // cpSync, though it holds the event loop: fs.promises.cp takes twice as long here (0.8 s against 1.9 s).
  cpSync(dir, data, { recursive: true })
  chmodSync(data, 0o700)
  const entries = walk(data)
  // Directories fsynced too: their entries are what a create changed.
  for (let i = 0; i < entries.length; i += 64) {
    await Promise.all(
      entries.slice(i, i + 64).map(async (e) => {
        if (account) await chown(e, account.uid, account.gid)
        await fsyncPath(e)
      }),
    )
  }
}

function walk(dir: string): string[] {
  const out = [dir]
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    if (e.isDirectory()) out.push(...walk(p))
    else out.push(p)
  }
  return out
}

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}
