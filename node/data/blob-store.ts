import { createHash, randomUUID } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import type { Hash } from '../core/ids.js'
import { ParleyError } from '../core/errors.js'
import { fsyncDir } from '../core/atomic-file.js'

export interface StoredBlob {
  hash: Hash
  size: number
}

export interface BlobWriteOptions {
  /** Refuse (and discard) the blob once it passes this many bytes: PAYLOAD_TOO_LARGE. */
  maxBytes?: number
  /** The blob must have exactly this hash and size, or it is discarded: BAD_PEER_DATA (it was announced so). */
  expect?: StoredBlob
}

/**
 * How long after a write put a blob in place its file is not removed by `removeDiscarded`: the writer records the blob
 * as held only after the write (an upload first reads the rest of its form and checks its value), and a removal
 * decided before that record must not take the file the record will name.
 */
export const LANDING_GRACE_MS = 10 * 60_000

/**
 * The node's private blob store: files named by the sha256 of their content, written through a temporary file
 * that is hashed as it streams in, fsynced, then renamed into place and the folder fsynced. A blob is therefore
 * either whole and durable under its hash or absent; memory use is one chunk whatever the size.
 */
export class BlobStore {
  /** When a write last put each blob in place (epoch ms), kept for `LANDING_GRACE_MS`. */
  private readonly landed = new Map<Hash, number>()
  /** Blobs whose record was deleted while the node runs: their files go at the next `removeDiscarded`. */
  private readonly discarded = new Set<Hash>()

  private constructor(
    private readonly dir: string,
    private readonly tmpDir: string,
    private readonly now: () => number,
  ) {}

  /** `now`: the clock of `LANDING_GRACE_MS` (a test's own). */
  static async open(dir: string, opts: { now?: () => number } = {}): Promise<BlobStore> {
    const tmpDir = join(dir, 'tmp')
    await mkdir(tmpDir, { recursive: true })
    // Leftovers of writes a crash interrupted: never referenced, since a blob is used only after its rename.
    for (const f of await readdir(tmpDir)) await rm(join(tmpDir, f), { force: true })
    return new BlobStore(dir, tmpDir, opts.now ?? Date.now)
  }

  async write(source: AsyncIterable<Uint8Array>, opts: BlobWriteOptions = {}): Promise<StoredBlob> {
    const tmp = join(this.tmpDir, randomUUID())
    const fh = await open(tmp, 'w')
    const sha = createHash('sha256')
    let size = 0
    let renamed = false
    try {
      const limit = opts.expect ? opts.expect.size : opts.maxBytes
      for await (const chunk of source) {
        size += chunk.length
        if (limit !== undefined && size > limit) {
          throw opts.expect
            ? new ParleyError('BAD_PEER_DATA', `blob is larger than the announced ${opts.expect.size} bytes`)
            : new ParleyError('PAYLOAD_TOO_LARGE', `blob is larger than ${limit} bytes`)
        }
        sha.update(chunk)
        let off = 0
        while (off < chunk.length) off += (await fh.write(chunk, off, chunk.length - off)).bytesWritten
      }
      await fh.sync()
      await fh.close()
      const hash = sha.digest('hex') as Hash
      if (opts.expect && (hash !== opts.expect.hash || size !== opts.expect.size)) {
        throw new ParleyError('BAD_PEER_DATA', `blob content has hash ${hash} and ${size} bytes, announced ${opts.expect.hash} and ${opts.expect.size} bytes`)
      }
      // Same content, same name: if the blob is already here the rename replaces it with identical bytes.
      await rename(tmp, this.path(hash))
      renamed = true
      this.landed.set(hash, this.now())
      await fsyncDir(this.dir)
      return { hash, size }
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (!renamed && (code === 'ENOSPC' || code === 'EDQUOT')) {
        throw new ParleyError('STORAGE_FULL', `the disk holding the blob store is full (${code}): the blob was not stored, and nothing of it is kept`, { cause: err })
      }
      throw err
    } finally {
      if (!renamed) {
        await fh.close().catch(() => {})
        await rm(tmp, { force: true })
      }
    }
  }

  /**
   * Removes blob files nothing records as held: an upload refused after its blob was written (a failed schema, a
   * form that went wrong after the file), or a crash between a blob's rename and its record. Only safe while no
   * write is in flight, so it runs at startup. Answers how many were removed.
   */
  async sweep(held: (hash: Hash) => boolean): Promise<number> {
    let removed = 0
    for (const f of await readdir(this.dir)) {
      if (!/^[0-9a-f]{64}$/.test(f) || held(f as Hash)) continue
      await rm(join(this.dir, f), { force: true })
      removed++
    }
    if (removed > 0) await fsyncDir(this.dir)
    return removed
  }

  /** The blob's record is gone (expired, its batch deleted): its file is removed by the next `removeDiscarded`. */
  discard(hash: Hash): void {
    this.discarded.add(hash)
  }

  /**
   * Removes the files of discarded blobs that are still not held and that no write put in place within
   * `LANDING_GRACE_MS`; those are kept for a later call (and the next start's sweep removes whatever is left). Safe
   * while writes are in flight. Answers how many files were removed.
   */
  async removeDiscarded(held: (hash: Hash) => boolean): Promise<number> {
    const at = this.now()
    for (const [hash, when] of this.landed) if (at - when >= LANDING_GRACE_MS) this.landed.delete(hash)
    let removed = 0
    for (const hash of [...this.discarded]) {
      if (held(hash)) {
        this.discarded.delete(hash)
        continue
      }
      if (this.landed.has(hash)) continue
      this.discarded.delete(hash)
      await rm(this.path(hash), { force: true })
      removed++
    }
    if (removed > 0) await fsyncDir(this.dir)
    return removed
  }

  /** Streams a held blob; `undefined` when it is not here. */
  async read(hash: Hash): Promise<{ stream: Readable; size: number } | undefined> {
    const p = this.path(hash)
    try {
      const s = await stat(p)
      return { stream: createReadStream(p, { highWaterMark: 256 * 1024 }), size: s.size }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw err
    }
  }

  /**
   * A held blob as re-iterable content: each `[Symbol.asyncIterator]()` opens a fresh read of the file (what the
   * exchange needs, since every attempt of a send reads from the start). Iterating a blob that is not here throws.
   */
  content(hash: Hash): AsyncIterable<Uint8Array> {
    const read = (): Promise<{ stream: Readable } | undefined> => this.read(hash)
    return {
      [Symbol.asyncIterator]: () =>
        (async function* (): AsyncGenerator<Uint8Array> {
          const held = await read()
          if (!held) throw new ParleyError('NOT_FOUND', `blob ${hash} is not in the blob store`)
          yield* held.stream as AsyncIterable<Uint8Array>
        })(),
    }
  }

  path(hash: Hash): string {
    if (!/^[0-9a-f]{64}$/.test(hash)) throw new Error(`not a blob hash: ${hash}`)
    return join(this.dir, hash)
  }
}
