import { errorMessage } from '../core/errors.js'
import { Backoff } from '../core/backoff.js'
import type { BatchId, Hash } from '../core/ids.js'
import { now, type Timestamp } from '../core/time.js'
import type { Database } from '../db/database.js'
import type { PinsRepo } from '../db/repos/pins.js'
import type { BatchesRepo } from '../db/repos/batches.js'
import type { MessagesRepo } from '../db/repos/messages.js'
import { refKey } from '../db/repos/ref-key.js'
import type { DataRepo } from '../db/repos/data.js'
import type { EventsRepo } from '../db/repos/events.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import type { BlobsRepo } from '../db/repos/blobs.js'
import type { BlobRefsRepo } from '../db/repos/blob-refs.js'
import type { AnnouncedBlob, BatchPayload, BatchRecord, Message, NodeEvent, Pin, PinnedBatch, Wait } from '../model/index.js'
import type { DataValidator } from '../data/validator.js'
import type { DefinitionHandler } from '../definitions/types.js'
import { StandingQueues } from './standing.js'
import type { PrivateChecks } from './private-check.js'
import type { RecentBatches } from './recent-batches.js'
import { Pass, type PassResult } from './pass.js'
import { IndexedManifest } from './manifest.js'
import { orderingOf } from './ordering.js'
import { storeArrival, storeUnwalked, type Arrival } from './receive.js'
import { WalkPosition } from './walk.js'

export interface AggregatorDeps {
  db: Database
  pins: PinsRepo
  batches: BatchesRepo
  messages: MessagesRepo
  data: DataRepo
  events: EventsRepo
  identities: IdentitiesRepo
  blobs: BlobsRepo
  refs: BlobRefsRepo
  validator: DataValidator
  definitions: DefinitionHandler[]
  /** Batches just stored, handed to the pass that walks them first instead of read back (recent-batches.ts). */
  recent?: RecentBatches
  /** The masked-pin checks of private messages; without them private pins wait (a node without private messaging). */
  privateChecks?: PrivateChecks
  /**
   * Asks for a public blob a message's data announces, once the message's key checks out (the fetcher does not fetch
   * those of a batch whose key is no member's on store).
   */
  wantBlob?: (b: AnnouncedBlob) => void
  log: (line: string) => void
  /** Told after each durable pass: messages confirmed or rejected, and the events written. */
  onOutcome: (o: { confirmed: Message[]; rejected: { message: Message; reason: string }[]; events: NodeEvent[] }) => void
}

const RETRY_MIN_MS = 1000
const RETRY_MAX_MS = 30_000

/**
 * Turns pins into confirmations, in chain order. A message is confirmed when its batch is here and verified,
 * its blobs are held, its signer is the identity it claims to be, its data conforms to its datatypes, and no
 * earlier pin on any of its contexts is still waiting: on one topic, nothing overtakes. Waiting pins are
 * skipped, and the walk rewinds to them when what they wait for arrives (a batch, a blob, an identity, a
 * datatype): a batch's arrival walks again from its first pin, anything else from the first waiting pin whose batch
 * is here, since a pin whose batch is not here cannot be decided (a member outside a private group never receives
 * that group's batches, and walking their pins again at every rewind would make each rewind cost more with every
 * private batch it is not part of). Each page of pins is one transaction (see Pass); which contexts have broadcast
 * pins waiting is kept in memory, rebuilt from the database at start; private pins are ordered by their nonces (see
 * PrivateChecks), not by context, and are not kept. A pass that fails (its transaction refused while the disk is
 * full, say) is walked again later: once the database takes writes again, or after a backoff. One log line per
 * distinct problem.
 */
export class Aggregator {
  readonly name = 'aggregator'
  private running = false
  private again = false
  private idle: Promise<void> = Promise.resolve()
  private settleIdle: () => void = () => {}
  private stopped = false
  private retryTimer: NodeJS.Timeout | undefined
  private readonly failures = new Backoff(RETRY_MIN_MS, RETRY_MAX_MS)
  /** Ends a wait for the disk to have room when the aggregator stops. */
  private readonly abort = new AbortController()
  private readonly queues = new StandingQueues((signer) => this.registeredAt(signer))
  private readonly walk: WalkPosition
  /** Pin events whose payload was refused (batch-fetcher.ts): their pins are freed by the next pass, in its transaction. */
  private readonly refusals: Pick<PinnedBatch, 'batchId' | 'batchHash' | 'signer' | 'eventId'>[] = []
  /**
   * Why each message its own checks could not decide waits (a blob, a datatype, an identity...), as the last pass that
   * walked it found, and when: what a message trace shows. Only messages that passed their ordering checks, so at most
   * one per topic is held back here; those behind them are not noted (explain runs the ordering checks again). By
   * refKey: two messages may share an id. Memory
   * only, like the queues: a start walks every waiting pin whose batch is here, which finds each reason again.
   */
  private readonly waits = new Map<string, { wait: Wait; at: Timestamp }>()
  /** Batches handed over by receive, stored by the walk's loop in turn. */
  private readonly arrivals: Arrival[] = []

  constructor(private readonly deps: AggregatorDeps) {
    this.walk = new WalkPosition(deps.pins, this.queues)
  }

  start(): void {
    this.walk.start()
    this.wake()
  }

  /** Ends after the pass in flight (its transaction commits or fails whole); later wake-ups are ignored. */
  async stop(): Promise<void> {
    this.stopped = true
    this.abort.abort()
    if (this.retryTimer) clearTimeout(this.retryTimer)
    await this.whenIdle()
    // Stored without a walk, as a batch arriving after the stop is: the next start walks their pins.
    await this.storeArrivalsUnwalked()
  }

  /** New pins arrived after the current position. */
  wake(): void {
    if (this.stopped) return
    if (this.running) {
      this.again = true
      return
    }
    this.running = true
    this.idle = new Promise((r) => (this.settleIdle = r))
    void this.run()
  }

  /**
   * A batch was stored (or refused): its pins may now be decided, so walk again from its first waiting pin. This is
   * the only way back to a pin whose batch was not here when it was read (a broadcast batch downloaded late, a private
   * batch delivered after its pin), as in FireFly, where a batch's arrival rewinds to it.
   */
  batchArrived(batchId: BatchId, batchHash?: Hash): void {
    this.rewind(this.deps.pins.minUndispatchedSeqOfBatch(batchId, batchHash))
  }

  /**
   * Stores a verified broadcast batch another member sent (batch-fetcher.ts) and walks its pins, in one transaction:
   * its record and data, then the walk its arrival starts (batchArrived: from its first waiting pin), then its message
   * rows, each written once in the state that walk left it. A message is otherwise inserted pending and updated when
   * confirmed, moments later, which on PostgreSQL writes the whole row and an entry in every index of `messages` again
   * (StagedBatch). Done by the walk's own loop, between passes, so that the walk sees its queues as every earlier pass
   * left them durably. A batch whose messages the walk cannot decide from memory (definitions), which carries rows held
   * here already, or whose walk fails (receive.ts storeArrival), is stored as storeReceivedBatch does and then walked, as
   * before. Resolves once the batch is durably stored; rejects when it could not be (BAD_PEER_DATA: nothing of it ever
   * can be; anything else: the store failed, to be retried).
   */
  receive(batch: BatchPayload, manifest: string, payloadRef: string): Promise<void> {
    if (this.stopped) return storeUnwalked(this.deps, batch, manifest, payloadRef).then(() => {})
    return new Promise((resolve, reject) => {
      this.arrivals.push({ batch, manifest, payloadRef, resolve, reject })
      this.wake()
    })
  }

  /**
   * The payload a pin event named was refused (it did not verify, or could not be read): that event's pins are used,
   * on every member alike since the verdict depends only on the payload, and the contexts they held are free. Done by
   * the next pass, so that the queues and the table change together.
   */
  pinEventRefused(p: Pick<PinnedBatch, 'batchId' | 'batchHash' | 'signer' | 'eventId'>): void {
    this.refusals.push(p)
    this.wake()
  }

  /**
   * A blob reference was settled: any waiting message may carry it, so walk again from the first waiting pin whose
   * batch is here (those of batches not here, private ones of groups this member is not in say, cannot be decided).
   */
  blobSettled(): void {
    this.rewind(this.deps.pins.minHeldWaitingSeq())
  }

  /**
   * Something changed that the aggregator did not do itself (pins marked in the database by hand, say): read the
   * waiting pins again and walk from the first of them.
   */
  recheckWaiting(): void {
    // Safe at any moment: a pass runs synchronously inside its transaction, so between passes the database holds
    // exactly what every pass decided.
    this.queues.reset(this.deps.pins.waitingBroadcast())
    this.deps.recent?.clear()
    this.rewind(this.deps.pins.minHeldWaitingSeq())
  }

  /** How many waiting pins the context queues hold in memory (broadcast pins only: private ones are not queued). */
  get queuedPins(): number {
    return this.queues.size
  }

  /**
   * Why the aggregator cannot decide `message` (of `batch`, stored here) now, read-only: first its ordering checks, run
   * again on its pins as they stand against the live context queues and nonces (ordering.ts, the code a pass runs
   * first); then the reason its own checks gave at the last pass that walked it, with when. Undefined while none of
   * its pins is read (nothing orders it yet), once it is decided, or when nothing holds it back (a pass is due).
   */
  explain(message: Message, batch: BatchRecord): { wait: Wait; at?: Timestamp } | undefined {
    if (message.state === 'confirmed' || message.state === 'rejected' || batch.state === 'refused') return undefined
    const entry = new IndexedManifest(batch.manifest).entries.find((e) => e.id === message.header.id)
    if (!entry) return undefined
    const pins = new Map(this.deps.pins.deciding(batch.id, batch.hash, batch.key).map((p) => [p.index, p]))
    const range = { from: entry.firstPin, to: entry.firstPin + entry.topics - 1 }
    let firstSeq: number | undefined
    for (let i = range.from; i <= range.to; i++) {
      const p = pins.get(i)
      if (p && p.batchHash === batch.hash) firstSeq = Math.min(firstSeq ?? p.seq, p.seq)
    }
    if (firstSeq === undefined) return undefined
    // Queues a failed pass left stale say nothing; a pass is due, which reads them again.
    if (!this.walk.queuesKnown) return undefined
    const ordering = orderingOf(message, batch, pins, range, firstSeq, this.queues, this.deps.privateChecks)
    if (ordering.kind === 'wait') return { wait: ordering.wait }
    return this.waits.get(refKey({ id: message.header.id, hash: message.hash }))
  }

  /** How many messages' own-check reasons are noted (for tests and diagnostics: at most about one per held topic). */
  get notedWaits(): number {
    return this.waits.size
  }

  /** Resolves once no pass is running (tests and shutdown). */
  whenIdle(): Promise<void> {
    return this.running ? this.idle : Promise.resolve()
  }

  private rewind(seq: number | undefined): void {
    this.walk.rewind(seq)
    this.wake()
  }

  private async run(): Promise<void> {
    try {
      do {
        this.again = false
        if (this.refusals.length > 0 && !this.stopped) await this.freeRefused()
        while (!this.stopped) {
          // Before anything walks with them: a failed pass leaves the queues to be read here (walk.ts).
          this.walk.readQueuesIfStale()
          const arrival = this.arrivals.shift()
          if (arrival !== undefined) {
            await this.store(arrival)
            continue
          }
          const page = this.walk.nextPage()
          if (page === undefined) break
          let result: PassResult
          try {
            // The pass marks the page's pins used as it decides (they are its view of each batch): a page is never
            // reused after its pass, a failed one included (the next loop reads the page again).
            result = await this.pass(page)
          } catch (err) {
            this.walk.failedPage(page)
            throw err
          }
          if (result.rewindWaiting) this.walk.rewindWaiting()
        }
      } while (this.again && !this.stopped)
    } catch (err) {
      // Batches handed over meanwhile are stored now, not when the retry comes: their walk waits for it.
      await this.storeArrivalsUnwalked()
      if (!this.stopped) this.retryLater(err)
    } finally {
      this.running = false
      this.settleIdle()
      // A batch handed over after the failure's drain, while the loop was ending, is not left for the retry.
      if (!this.stopped && this.arrivals.length > 0) this.wake()
    }
  }

  /** Stores an arrival, and walks its pins in the same transaction when it can (receive.ts); settles the arrival. */
  private async store(a: Arrival): Promise<void> {
    let received
    try {
      received = await storeArrival(this.deps, this.walk, this.queues, a)
    } catch (err) {
      return a.reject(err)
    }
    a.resolve()
    if (received.kind === 'stored') return this.walk.rewind(received.firstPin)
    this.committed(received.result, received.at, received.writes)
    if (received.result.rewindWaiting) this.walk.rewindWaiting()
  }

  /** Stores every batch handed over and not stored yet without a walk, settling each; the walk is rewound to their pins. */
  private async storeArrivalsUnwalked(): Promise<void> {
    while (this.arrivals.length > 0) {
      await Promise.all(
        this.arrivals.splice(0).map((a) =>
          storeUnwalked(this.deps, a.batch, a.manifest, a.payloadRef).then((first) => {
            a.resolve()
            this.walk.rewind(first)
          }, a.reject),
        ),
      )
    }
  }

  /** Marks the pins of refused pin events used and takes them off the queues; walks again what they held back. */
  private async freeRefused(): Promise<void> {
    const events = this.refusals.splice(0)
    let freed: Pin[] = []
    try {
      freed = await this.deps.db.transaction((tx) => {
        const pins = events.flatMap((e) => this.deps.pins.ofEvent(e, tx)).filter((p) => !p.dispatched)
        if (pins.length > 0) this.deps.pins.markDispatchedSeqs(tx, pins.map((p) => p.seq))
        return pins
      })
    } catch (err) {
      this.refusals.unshift(...events)
      throw err
    }
    for (const p of freed) if (!p.masked) this.queues.leave(p)
    if (freed.length > 0) this.walk.rewindWaiting()
  }

  /**
   * Where `signer` became a member's key in the chain's order: after the BatchPin event of its identity's claim
   * (recorded when the claim was confirmed). An identity registered without one (before v16, or a test's fixture)
   * counts from the start.
   */
  private registeredAt(signer: string): number | undefined {
    const identity = this.deps.identities.byVerifier('ethereum_address', signer)
    return identity === undefined ? undefined : (identity.registeredAfter ?? 0)
  }

  private retryLater(err: unknown): void {
    const problem = errorMessage(err)
    if (this.failures.failed(problem)) this.deps.log(`aggregator: pass failed, will retry: ${problem}`)
    const { db } = this.deps
    if (db.writesPaused) void db.whenWritable(this.abort.signal).then(() => this.rewind(undefined))
    else this.retryTimer = setTimeout(() => this.rewind(undefined), this.failures.next())
  }

  private async pass(page: Pin[]): Promise<PassResult> {
    const at = now()
    let writes = 0
    const result = await this.deps.db.transaction((tx) => {
      const r = new Pass(this.deps, this.queues, tx, at).run(page)
      writes = this.deps.messages.writes
      return r
    })
    this.committed(result, at, writes)
    return result
  }

  /** What follows a pass's durable commit: `writes` is the messages' write count at its end (MessagesRepo.remember). */
  private committed(result: PassResult, at: Timestamp, writes: number): void {
    if (this.failures.retrying) {
      this.deps.log('aggregator: passes succeed again')
      this.failures.reset()
    }
    // Logged once durable: a pass whose transaction is abandoned (receive.ts) decided nothing.
    for (const r of result.rejected) this.deps.log(`message ${r.message.header.id} rejected: ${r.reason}`)
    for (const [id, wait] of result.waits) this.waits.set(id, { wait, at })
    if (this.waits.size > 0) {
      for (const m of [...result.confirmed, ...result.rejected.map((r) => r.message)]) this.waits.delete(refKey({ id: m.header.id, hash: m.hash }))
    }
    for (const f of result.afterCommit) f()
    // As the pass left them, for the event deliveries that read them next.
    this.deps.messages.remember([...result.confirmed, ...result.rejected.map((r) => r.message)], writes)
    if (result.confirmed.length + result.rejected.length > 0) this.deps.onOutcome({ confirmed: result.confirmed, rejected: result.rejected, events: result.events })
  }
}
