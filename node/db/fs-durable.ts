import { open, rename, rm } from 'node:fs/promises'

/**
 * The few filesystem steps whose ordering makes a checkpoint crash-safe. A rename is only durable once
 * the directory holding it has been fsynced, and a file's contents only once the file has.
 */

/** fsyncs a directory so that renames and creations inside it survive a power cut. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

/** Writes `data` to `tmp`, syncs it, renames it over `target`, and syncs the directory. */
export async function replaceFileDurably(dir: string, tmp: string, target: string, data: Uint8Array): Promise<void> {
  const fh = await open(tmp, 'w')
  try {
    let off = 0
    while (off < data.length) {
      const { bytesWritten } = await fh.write(data, off, data.length - off, off)
      off += bytesWritten
    }
    await fh.sync()
  } finally {
    await fh.close()
  }
  await rename(tmp, target)
  await fsyncDir(dir)
}

/** Removes a leftover temporary file of an interrupted checkpoint; it never holds anything needed. */
export async function removeStale(path: string): Promise<void> {
  await rm(path, { force: true })
}
