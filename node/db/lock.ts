import { join, resolve } from 'node:path'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { DatabaseError } from './errors.js'

export const LOCK_FILE = 'LOCK'

/** Folders this process has open: a second open here would append to the same journal twice. */
const heldHere = new Set<string>()

export interface DirLock {
  release(): Promise<void>
}

/**
 * Claims a data folder for this process. Two processes appending to one journal would interleave
 * frames and corrupt it, so the second one must refuse to start. The lock file holds the owner's PID;
 * a lock whose owner has died (a crash, a SIGKILL) is stale and taken over.
 *
 * Best effort: it cannot tell a live unrelated process that reused the PID from the owner (the error
 * names the file so an operator can remove it), and two processes racing over a stale lock could both win.
 */
export async function acquireLock(dir: string): Promise<DirLock> {
  const key = resolve(dir)
  const path = join(key, LOCK_FILE)
  if (heldHere.has(key)) throw new DatabaseError('DB_LOCKED', `the database in ${key} is already open in this process`)
  try {
    await writeFile(path, `${process.pid}\n`, { flag: 'wx' })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    const owner = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10)
    if (Number.isInteger(owner) && owner !== process.pid && isAlive(owner)) {
      throw new DatabaseError('DB_LOCKED', `the database in ${key} is in use by process ${owner} (lock file ${path})`)
    }
    await writeFile(path, `${process.pid}\n`)
  }
  heldHere.add(key)
  let released = false
  return {
    async release() {
      if (released) return
      released = true
      heldHere.delete(key)
      await rm(path, { force: true })
    },
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
