import { setMaxListeners } from 'node:events'
import { errorMessage, isParleyError, ParleyError } from '../core/errors.js'
import { Backoff } from '../core/backoff.js'
import type { Hash } from '../core/ids.js'
import type { Gate } from '../core/gate.js'
import { now } from '../core/time.js'
import type { Database } from '../db/database.js'
import type { BlobsRepo } from '../db/repos/blobs.js'
import type { DataRepo } from '../db/repos/data.js'
import type { BlobRefsRepo } from '../db/repos/blob-refs.js'
import type { BlobStore } from './blob-store.js'
import type { SharedStorage } from '../storage/shared-storage.js'
import { diskFullError, isDiskFull } from '../db/disk-full.js'
import { type AnnouncedBlob } from '../model/index.js'

const RETRY_MIN_MS = 250
const RETRY_MAX_MS = 15_000
/** Blobs can be gigabytes: a couple at a time keeps disk and network busy without starving batch downloads. */
const CONCURRENCY = 2


/**
 * Checks the blob references other members' broadcasts announce: each is read from shared storage, streamed into
 * the blob store and checked against the announced hash and size on the way; the verdict is recorded with the
 * blob, and the aggregator told so the messages waiting on it can be confirmed (or rejected, when the content
 * there is not what was announced). A reference is read even when this node already holds a blob with that hash:
 * the verdict must be the one every member reaches. An unreachable store is retried with backoff. So is a full disk
 * (the blob store's or the database's): that one is logged once for the whole fetcher, not once per blob, and while
 * the database's journal waits for space no blob is downloaded, only to be refused at the end.
 */
export class BlobFetcher {
  readonly name = 'blob fetcher'
  private readonly queue: Attempt[] = []
  private readonly inFlight = new Set<Promise<void>>()
  private readonly wanted = new Set<string>()
  private readonly timers = new Set<NodeJS.Timeout>()
  private active = 0
  /** Whether the queue waits for the reads gate to open. */
  private waitingForReads = false
  private stopped = false
  /** Every fetch waiting (at a held read gate, in a backoff, in a download) listens on it: no listener cap. */
  private readonly abort = withoutListenerCap(new AbortController())
  /** The fetcher's last storage problem (a full disk), logged once; cleared (and said) when a blob is stored again. */
  private storageProblem: string | undefined

  constructor(
    private readonly deps: {
      db: Database
      data: DataRepo
      blobs: BlobsRepo
      refs: BlobRefsRepo
      blobStore: BlobStore
      storage: SharedStorage
      log: (line: string) => void
      /** A blob is now held (or known never to be obtainable): messages waiting on it can move. */
      settled: (hash: Hash) => void
      /**
       * While held, no blob is downloaded (downloads under way finish): the wanted blobs wait in the queue, without a
       * retry or a log line, and the queue moves again at once when it is released. (The admin routes' IPFS hold.)
       */
      reads?: Gate
    },
  ) {}

  /** After a restart: everything announced and not yet checked. */
  start(): void {
    for (const b of this.deps.data.blobsToFetch()) this.want(b)
  }

  want(b: AnnouncedBlob): void {
    const key = keyOf(b)
    if (this.stopped || this.wanted.has(key) || this.deps.refs.verdict(b) !== undefined) return
    this.wanted.add(key)
    this.queue.push({ blob: b, backoff: new Backoff(RETRY_MIN_MS, RETRY_MAX_MS) })
    this.pump()
  }

  /**
   * Abandons transfers in flight (a half-written blob is discarded) and pending retries, and waits for them to end;
   * they resume at the next start.
   */
  async stop(): Promise<void> {
    this.stopped = true
    this.abort.abort()
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
    await Promise.all(this.inFlight)
  }

  private pump(): void {
    if (this.stopped) return
    const reads = this.deps.reads
    if (reads?.held && this.queue.length > 0) {
      // One wait for the whole queue: the release pumps it.
      if (!this.waitingForReads) {
        this.waitingForReads = true
        void reads.whenOpen(this.abort.signal).then(() => {
          this.waitingForReads = false
          this.pump()
        })
      }
      return
    }
    while (!this.stopped && this.active < CONCURRENCY && this.queue.length > 0) {
      const a = this.queue.shift()!
      this.active++
      const run = this.attempt(a)
        // Only recording a refusal can fail here (the database); the blob is retried like an unreachable store.
        .catch((err: unknown) => this.retryLater(a, err))
        .finally(() => {
          this.inFlight.delete(run)
          this.active--
          this.pump()
        })
      this.inFlight.add(run)
    }
  }

  /**
   * One try. A store that cannot answer yet gives up the slot and comes back after a backoff, so blobs nobody
   * serves (yet) never hold up the others.
   */
  private async attempt(a: Attempt): Promise<void> {
    const { db, blobs, refs, blobStore, storage, log, settled } = this.deps
    const b = a.blob
    if (this.stopped) return
    if (refs.verdict(b) !== undefined) return this.done(b)
    if (db.diskFull) return this.retryLater(a, diskFullError(db.diskFull))
    try {
      if (!storage.validRef(b.public)) throw new ParleyError('BAD_PEER_DATA', `${JSON.stringify(b.public)} is not a shared-storage reference`)
      const stored = await blobStore.write(storage.download(b.public, this.abort.signal), { expect: { hash: b.hash, size: b.size } })
      await db.transaction((tx) => {
        blobs.insert(tx, { hash: stored.hash, size: stored.size, created: now() })
        refs.settle(tx, b, { ok: true }, now())
      })
      if (a.backoff.retrying) log(`blob ${b.hash}: fetched from ${b.public} after retrying`)
      this.storedAgain()
    } catch (err) {
      if (this.stopped) return
      if (!isParleyError(err, 'BAD_PEER_DATA')) return this.retryLater(a, err)
      log(`blob ${b.hash} published at ${b.public} refused: ${err.message}`)
      await db.transaction((tx) => refs.settle(tx, b, { ok: false, reason: `the blob published at ${b.public} does not match: ${err.message}` }, now()))
    }
    this.done(b)
    settled(b.hash)
  }

  private done(b: AnnouncedBlob): void {
    this.wanted.delete(keyOf(b))
  }

  /**
   * Queues the blob again after a wait: until the database takes writes again while its disk is full, a backoff
   * otherwise. A full disk is one problem for the whole fetcher; anything else is logged per blob.
   */
  private retryLater(a: Attempt, err: unknown): void {
    if (this.stopped) return
    const problem = errorMessage(err)
    const { db, log } = this.deps
    if (isDiskFull(err) || isParleyError(err, 'STORAGE_FULL') || db.diskFull) {
      if (problem !== this.storageProblem) log(`blob fetcher: cannot store blobs, retrying: ${problem}`)
      this.storageProblem = problem
    } else if (a.backoff.failed(problem)) {
      log(`blob ${a.blob.hash}: cannot fetch ${a.blob.public} yet: ${problem}; retrying`)
    }
    const again = (): void => {
      if (this.stopped) return
      this.queue.push(a)
      this.pump()
    }
    if (db.diskFull) {
      void db.whenWritable(this.abort.signal).then(again)
      return
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      again()
    }, a.backoff.next())
    this.timers.add(timer)
  }

  private storedAgain(): void {
    if (this.storageProblem === undefined) return
    this.storageProblem = undefined
    this.deps.log('blob fetcher: storing blobs again')
  }
}

interface Attempt {
  blob: AnnouncedBlob
  backoff: Backoff
}

const keyOf = (b: AnnouncedBlob): string => `${b.hash}\u0000${b.public}`

function withoutListenerCap(a: AbortController): AbortController {
  setMaxListeners(0, a.signal)
  return a
}
