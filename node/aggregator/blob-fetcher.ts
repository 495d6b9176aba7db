import { errorMessage } from '../core/errors.js'
import type { Hash } from '../core/ids.js'
import { now } from '../core/time.js'
import type { Database } from '../db/database.js'
import type { BlobsRepo } from '../db/repos/blobs.js'
import type { DataRepo } from '../db/repos/data.js'
import { BlobRefused, type BlobStore } from '../data/blob-store.js'
import type { SharedStorage } from '../storage/shared-storage.js'

const RETRY_MIN_MS = 250
const RETRY_MAX_MS = 15_000
/** Blobs can be gigabytes: a couple at a time keeps disk and network busy without starving batch downloads. */
const CONCURRENCY = 2

export interface WantedBlob {
  hash: Hash
  size: number
  /** Where the announcing member published it. */
  public: string
}

/**
 * Brings in the blobs other members' broadcasts refer to: streamed from shared storage into the blob store,
 * checked against the announced hash and size on the way, recorded as held, and the aggregator told so the
 * messages waiting for them can be confirmed. Content that does not match what was announced is recorded as
 * a problem on the announcing data items, so their messages are rejected rather than wait forever; an
 * unreachable store is retried with backoff.
 */
export class BlobFetcher {
  private readonly queue: WantedBlob[] = []
  private readonly wanted = new Set<string>()
  private active = 0
  private stopped = false
  private readonly abort = new AbortController()

  constructor(
    private readonly deps: {
      db: Database
      data: DataRepo
      blobs: BlobsRepo
      blobStore: BlobStore
      storage: SharedStorage
      log: (line: string) => void
      /** A blob is now held (or known never to be obtainable): messages waiting on it can move. */
      settled: (hash: Hash) => void
    },
  ) {}

  /** After a restart: everything announced and not yet held. */
  resume(): void {
    for (const b of this.deps.data.blobsToFetch()) this.want(b)
  }

  want(b: WantedBlob): void {
    const key = `${b.hash}\u0000${b.public}`
    if (this.stopped || this.wanted.has(key) || this.deps.blobs.has(b.hash)) return
    this.wanted.add(key)
    this.queue.push(b)
    this.pump()
  }

  /** Abandons transfers in flight (a half-written blob is discarded); they resume on the next start. */
  stop(): void {
    this.stopped = true
    this.abort.abort()
  }

  private pump(): void {
    while (this.active < CONCURRENCY && this.queue.length > 0) {
      const b = this.queue.shift()!
      this.active++
      void this.run(b).finally(() => {
        this.active--
        this.wanted.delete(`${b.hash}\u0000${b.public}`)
        this.pump()
      })
    }
  }

  private async run(b: WantedBlob): Promise<void> {
    const { db, data, blobs, blobStore, storage, log, settled } = this.deps
    let delay = RETRY_MIN_MS
    let lastProblem: string | undefined
    for (;;) {
      if (this.stopped || blobs.has(b.hash)) return
      try {
        if (!storage.validRef(b.public)) throw new InvalidReference(`${JSON.stringify(b.public)} is not a shared-storage reference`)
        const stored = await blobStore.write(storage.download(b.public, this.abort.signal), { expect: { hash: b.hash, size: b.size } })
        await db.transaction((tx) => blobs.insert(tx, { hash: stored.hash, size: stored.size, created: now() }))
        if (lastProblem) log(`blob ${b.hash}: fetched from ${b.public} after retrying`)
        settled(b.hash)
        return
      } catch (err) {
        if (err instanceof BlobRefused || err instanceof InvalidReference) {
          log(`blob ${b.hash} published at ${b.public} refused: ${err.message}`)
          await db.transaction((tx) => data.setBlobProblem(tx, b.hash, b.public, `the blob published at ${b.public} does not match: ${err.message}`))
          settled(b.hash)
          return
        }
        if (this.stopped) return
        const problem = errorMessage(err)
        if (problem !== lastProblem) log(`blob ${b.hash}: cannot fetch ${b.public} yet: ${problem}; retrying`)
        lastProblem = problem
        await new Promise((r) => setTimeout(r, delay))
        delay = Math.min(delay * 2, RETRY_MAX_MS)
      }
    }
  }
}

class InvalidReference extends Error {}
