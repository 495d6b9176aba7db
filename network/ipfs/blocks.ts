import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { FsBlockstore } from 'blockstore-fs'
import { NextToLast } from 'blockstore-fs/sharding'
import type { ReadableStorage } from 'ipfs-unixfs-exporter'
import type { WritableStorage } from 'ipfs-unixfs-importer'
import type { CID } from 'multiformats/cid'
import { IpfsError } from './errors.js'

/**
 * The recent blocks kept in memory (LocalBlocks): a batch's block is a few KB, and a block past 256 KiB is a blob's
 * chunk, read once by each member that fetches the blob, whose bytes are better left to the OS's page cache.
 */
const RECENT_BYTES = 8 * 1024 * 1024
const RECENT_BLOCK_BYTES = 256 * 1024

/** What the UnixFS importer (put) and exporter (get) need from a blockstore. */
export type Blocks = ReadableStorage & WritableStorage
type PutValue = Parameters<WritableStorage['put']>[1]
type Options = Parameters<ReadableStorage['get']>[1]

/** Kubo's words for a block it does not hold while offline: callers and logs name the exact block. */
export function missingBlock(cid: CID): IpfsError {
  return new IpfsError('not-found', `block was not found locally (offline): ipld: could not find ${cid.toString()}`)
}

/**
 * The filesystem blockstore of `<dir>/blocks`, with two adjustments: a block already on disk is not rewritten
 * (re-adding content costs a stat per block, not a write), and a missing block fails at once with an error that
 * names it. There is no network behind this store, so "missing" is final: nothing ever waits for a block.
 */
export class LocalBlocks implements Blocks {
  /**
   * Puts in progress, by block file. Repetitive content (zeros, repeated records) yields the same block many times
   * at once; blockstore-fs writes each through one shared temp file and retries the losing renames 10 x 100 ms,
   * which is slow and can briefly expose a truncated block. One write per block at a time avoids both.
   */
  private readonly writing = new Map<string, Promise<void>>()

  /**
   * Blocks written or read lately, by block file, least recently used first. Each batch a member adds is fetched by
   * every other member soon after (19 times over in a 20-member network): from memory, a read costs no open, stat,
   * read and close on libuv's threads. Blocks never change under their name, and nothing here deletes one.
   */
  private readonly recent = new Map<string, Uint8Array>()
  private recentBytes = 0

  private constructor(
    private readonly fs: FsBlockstore,
    /** blockstore-fs's default layout, held here to find a block's file for reading it whole. */
    private readonly sharding: NextToLast,
  ) {}

  static async open(path: string): Promise<LocalBlocks> {
    const sharding = new NextToLast()
    const fs = new FsBlockstore(path, { shardingStrategy: sharding })
    await fs.open()
    return new LocalBlocks(fs, sharding)
  }

  put(cid: CID, block: PutValue, options?: Options): Promise<CID> {
    // By file, not by CID: the file is named by the multihash alone, so a CIDv0 and a CIDv1 of the same bytes (one
    // add with cid-version=0, another with cid-version=1 and dag-pb leaves) are one block and one write.
    const key = this.sharding.encode(cid).file
    const pending = this.writing.get(key)
    if (pending) return pending.then(() => cid)
    const write = (async () => {
      try {
        if (!(await this.fs.has(cid, options))) await this.fs.put(cid, block, options)
        // The importer hands each block whole; a put of pieces (another caller's) is read back from its file.
        if (block instanceof Uint8Array) this.remember(key, block)
      } finally {
        this.writing.delete(key)
      }
    })()
    this.writing.set(key, write)
    return write.then(() => cid)
  }

  /**
   * The block in one piece. blockstore-fs streams the file in 64 KiB chunks, which the UnixFS exporter joins again
   * one chunk at a time (it-to-buffer copies everything read so far at each one): four copies of a 256 KiB leaf and
   * a stream's machinery, about a fifth of this process's CPU when members fetch batches. A block is bounded (a leaf
   * is one chunk of the file, at most 1 MiB; an inner node has at most max-file-links links, ~3 MB at its 65,536
   * limit), and the exporter holds it whole anyway.
   */
  async *get(cid: CID, options?: Options): AsyncGenerator<Uint8Array> {
    const { dir, file } = this.sharding.encode(cid)
    // An aborted read fails as a missing block, held in memory or not.
    if (options?.signal?.aborted) throw missingBlock(cid)
    let bytes = this.recent.get(file)
    if (bytes !== undefined) {
      this.recent.delete(file)
      this.recent.set(file, bytes)
    } else {
      try {
        bytes = await readFile(join(this.fs.path, dir, file), { signal: options?.signal })
      } catch {
        // As blockstore-fs did: any failure to read the block file is a missing block, with Kubo's offline message.
        throw missingBlock(cid)
      }
      this.remember(file, bytes)
    }
    yield bytes
  }

  /** Keeps a block of at most RECENT_BLOCK_BYTES among the recent ones, dropping the oldest past RECENT_BYTES. */
  private remember(file: string, bytes: Uint8Array): void {
    if (bytes.byteLength > RECENT_BLOCK_BYTES || this.recent.has(file)) return
    // A view into a larger buffer (a chunker's slice of a socket read) would keep all of it alive: keep a copy.
    if (bytes.byteOffset !== 0 || bytes.byteLength !== bytes.buffer.byteLength) bytes = bytes.slice()
    this.recent.set(file, bytes)
    this.recentBytes += bytes.byteLength
    for (const [oldest, held] of this.recent) {
      if (this.recentBytes <= RECENT_BYTES) break
      this.recent.delete(oldest)
      this.recentBytes -= held.byteLength
    }
  }

  has(cid: CID, options?: Options): Promise<boolean> {
    return this.fs.has(cid, options)
  }

  close(): Promise<void> {
    return this.fs.close()
  }
}

/** For `add --only-hash`: computes every block and keeps none, while reads still see the real store. */
export class HashOnlyBlocks implements Blocks {
  constructor(private readonly real: Blocks) {}

  put(cid: CID): Promise<CID> {
    return Promise.resolve(cid)
  }

  get(cid: CID, options?: Options): AsyncGenerator<Uint8Array> | Generator<Uint8Array> {
    return this.real.get(cid, options)
  }
}
