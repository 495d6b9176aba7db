import { randomBytes } from 'node:crypto'
import { link, readFile, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { DatabaseError } from './errors.js'

export const LOCK_FILE = 'LOCK'

/** Folders this process has open: a second open here would append to the same journal twice. */
const heldHere = new Set<string>()

export interface DirLock {
  release(): Promise<void>
}

/** How long a claim waits for another process that is taking over the same stale lock. */
const TAKEOVER_WAIT_MS = 5_000
/** Stale locks of stale locks: each level takes one more crash inside a takeover, so a few levels are plenty. */
const MAX_LEVELS = 4

/**
 * Claims a data folder for this process. Two processes appending to one journal would interleave frames and corrupt
 * it, so exactly one may hold it, however they race.
 *
 * The lock file holds its owner's PID and a token of its own, and comes into being whole: it is written under a name
 * of this claim's own, then hard-linked to `LOCK`, which fails if `LOCK` exists (an exclusive create, with no moment
 * when another process could read it empty). A lock whose owner has died (a crash, a SIGKILL) is stale and is taken
 * over; two processes that find it stale at once must not both remove it (the second would remove the first one's new
 * lock), so removing it is itself claimed, by the same exclusive link, under a name made from the stale lock's token:
 * the one process that wins it removes `LOCK` if it still holds that token, and then every process claims `LOCK`
 * again, where again only one link succeeds.
 *
 * A live unrelated process that reused a dead owner's PID keeps the lock from being taken (the error names the file,
 * so an operator can remove it).
 */
export async function acquireLock(dir: string): Promise<DirLock> {
  const key = resolve(dir)
  const path = join(key, LOCK_FILE)
  if (heldHere.has(key)) throw new DatabaseError('DB_LOCKED', `the database in ${key} is already open in this process`)
  heldHere.add(key)
  let claim: Claim
  try {
    claim = await exclusive(path, 0)
  } catch (err) {
    heldHere.delete(key)
    if (err instanceof HeldBy) throw new DatabaseError('DB_LOCKED', `the database in ${key} is in use by process ${err.pid} (lock file ${path})`)
    throw err
  }
  let released = false
  return {
    async release() {
      if (released) return
      released = true
      heldHere.delete(key)
      // Only our own lock: never one another process may have taken over meanwhile.
      if ((await readFile(path, 'utf8').catch(() => '')) === claim.content) await rm(path, { force: true })
    },
  }
}

interface Claim {
  /** The file's whole text: `<pid> <token>\n`. */
  content: string
}

/** The file is held by a live process. */
class HeldBy extends Error {
  constructor(readonly pid: number) {
    super(`held by process ${pid}`)
  }
}

/**
 * Creates `path` holding this process's PID and a fresh token, exclusively: resolves once this process made it, throws
 * HeldBy while a live process holds it. A stale one (its owner dead) is removed through a claim on its removal.
 */
async function exclusive(path: string, level: number): Promise<Claim> {
  const content = `${process.pid} ${randomBytes(12).toString('hex')}\n`
  const deadline = Date.now() + TAKEOVER_WAIT_MS
  for (;;) {
    if (await createWhole(path, content)) return { content }
    const found = await readFile(path, 'utf8').catch(() => undefined)
    // Gone between the link and the read (released, or removed as stale): claim it again.
    if (found === undefined) continue
    const owner = Number.parseInt(found, 10)
    if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) throw new HeldBy(owner)
    // Stale: its owner died, or it is this process's own from before (this process holds no lock on the folder).
    if (level >= MAX_LEVELS) throw new Error(`the lock file ${path} is stale and could not be taken over; remove it`)
    const token = /^\d+ ([0-9a-f]+)\n$/.exec(found)?.[1] ?? 'unreadable'
    const removal = `${path}.stale-${token}`
    try {
      await exclusive(removal, level + 1)
    } catch (err) {
      if (!(err instanceof HeldBy)) throw err
      // Another process is taking it over: it will remove it and claim it, or die and leave its claim stale.
      if (Date.now() > deadline) throw err
      await sleep(10)
      continue
    }
    try {
      if ((await readFile(path, 'utf8').catch(() => undefined)) === found) await rm(path, { force: true })
    } finally {
      await rm(removal, { force: true })
    }
  }
}

/** Writes `content` under a name of its own, then links it to `path`: false if `path` exists. */
async function createWhole(path: string, content: string): Promise<boolean> {
  const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
  await writeFile(temp, content, { flag: 'wx' })
  try {
    await link(temp, path)
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw err
  } finally {
    await rm(temp, { force: true })
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
