import { closeSync, fchmodSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs'
import { open, rename, rm } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'

/**
 * Replacing a whole file so that a crash or power cut at any moment leaves either the old file or the new
 * one under its name, never half of one, and so that once the call returns the new file survives a power
 * cut. The steps, and why each is needed:
 *   1. write the data to a temporary file next to the target: a crash here leaves the target untouched;
 *   2. fsync the temporary file: without it the rename below can reach the disk before the data does, and
 *      a power cut would leave the target's name on an empty or partial file;
 *   3. rename it over the target: on POSIX a rename within one directory atomically swaps the name over,
 *      so a reader sees the old file or the new one, nothing in between;
 *   4. fsync the directory: a rename is a change to the directory, and it is durable only once the
 *      directory itself has been fsynced; until then a power cut may bring back the old file.
 * The temporary file must therefore be in the same directory as the target (a rename cannot cross file
 * systems, and step 4 syncs that one directory). A temporary file left by a crash holds nothing anyone
 * needs: it is overwritten by the next write, or can be removed on start-up.
 *
 * This module imports nothing from the project, so that any part of it (node, network, scripts) can use it.
 */

export interface AtomicWriteOptions {
  /**
   * Permission bits of the new file, set exactly (not reduced by the umask), before any data is written,
   * so a secret is never readable by others, not even briefly. Without it the file gets the usual
   * default (0o666 less the umask).
   */
  mode?: number
  /** The temporary file; default `${path}.tmp`. It must be in the same directory as `path`. */
  tmp?: string
}

/** fsyncs a directory, so that renames and file creations inside it survive a power cut. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

/** The synchronous {@link fsyncDir}. */
export function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * Writes `data` (a string is written as UTF-8) to `path` atomically and durably: temporary file, fsync,
 * rename over `path`, fsync of the directory. When it resolves the new contents are on disk; when it
 * rejects `path` still holds its old contents (or is still absent), unless only the final directory fsync
 * failed, in which case the new file is in place but may not survive a power cut.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, opts: AtomicWriteOptions = {}): Promise<void> {
  const { tmp, dir } = paths(path, opts)
  const bytes = toBytes(data)
  // If the temporary file cannot even be created there is nothing of ours to clean up.
  const fh = await open(tmp, 'w', opts.mode)
  try {
    try {
      if (opts.mode !== undefined) await fh.chmod(opts.mode)
      let off = 0
      while (off < bytes.length) off += (await fh.write(bytes, off, bytes.length - off, off)).bytesWritten
      await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(tmp, path)
  } catch (err) {
    // The target was not touched; do not leave a half-written temporary file next to it.
    await rm(tmp, { force: true }).catch(() => undefined)
    throw err
  }
  await fsyncDir(dir)
}

/** The synchronous {@link writeFileAtomic}, with the same steps and guarantees. */
export function writeFileAtomicSync(path: string, data: string | Uint8Array, opts: AtomicWriteOptions = {}): void {
  const { tmp, dir } = paths(path, opts)
  const bytes = toBytes(data)
  const fd = openSync(tmp, 'w', opts.mode)
  try {
    try {
      if (opts.mode !== undefined) fchmodSync(fd, opts.mode)
      let off = 0
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off, off)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, path)
  } catch (err) {
    try {
      rmSync(tmp, { force: true })
    } catch {
      // best effort: the error worth reporting is the one above
    }
    throw err
  }
  fsyncDirSync(dir)
}

function paths(path: string, opts: AtomicWriteOptions): { tmp: string; dir: string } {
  const tmp = opts.tmp ?? `${path}.tmp`
  const dir = dirname(resolve(path))
  if (dirname(resolve(tmp)) !== dir) {
    throw new Error(`the temporary file ${tmp} must be in the same directory as ${path}`)
  }
  if (resolve(tmp) === resolve(path)) throw new Error(`the temporary file must not be ${path} itself`)
  return { tmp, dir }
}

function toBytes(data: string | Uint8Array): Uint8Array {
  return typeof data === 'string' ? Buffer.from(data, 'utf8') : data
}
