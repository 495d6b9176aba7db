import type { BatchId, Hash } from '../core/ids.js'
import type { Tx } from '../db/database.js'
import type { Data, BatchRecord, Message, Pin } from '../model/index.js'
import { refKey } from '../db/repos/ref-key.js'
import { asCarried, type Carried } from '../db/repos/carried-messages.js'
import { IndexedManifest } from './manifest.js'
import type { AggregatorDeps } from './aggregator.js'
import type { StagedBatch } from './staged-batch.js'

/** What one batch looks like to a pass: read once, whatever number of its pins the page holds. */
export interface BatchView {
  record: BatchRecord
  manifest: IndexedManifest
  /** The pins that decide its messages, by index: those its own key signed naming its hash (PinsRepo.ofBatch). */
  pins: Map<number, Pin>
  /** By id (unique in a batch). */
  messages: Map<string, Message>
  /** By id and hash (refKey). */
  data: Map<string, Data>
  /**
   * By message id: what this batch carried with those of its messages that were held from another batch, where the
   * message rows hold what that batch carried. A message is decided by its deciding batch's contents, and keeps them.
   */
  carried: Map<string, Carried>
  /** Whether its data was sent to be checked off the main thread (once a first check of the batch had to go there). */
  prefetched: boolean
}

/** The most data items one batch sends to be checked off the main thread at once. */
const PREFETCH_ITEMS = 1000

/**
 * The batches one pass reads (pass.ts): each batch, its pins, its messages and its data read once, whatever number of
 * its pins the page holds, and not at all for pins the page itself holds.
 */
export class BatchViews {
  /** By batch id and hash: batches sharing an id are kept apart. */
  private readonly views = new Map<string, BatchView | undefined>()
  /**
   * The page's pins by batch id, hash and signer, and index: a batch whose deciding pins the page holds every one of
   * is not read again.
   */
  private readonly pagePins = new Map<string, Map<number, Pin>>()

  constructor(
    private readonly deps: AggregatorDeps,
    private readonly tx: Tx,
    /** A batch stored in this transaction whose message rows are not written yet: seen as its contents say. */
    private readonly staged?: StagedBatch,
  ) {}

  /** The page's pins, as the views' own (marked used as they are): a batch whose deciding pins it holds is not read for them. */
  notePage(page: readonly Pin[]): void {
    for (const pin of page) {
      const key = pinsKey(pin.batchId, pin.batchHash, pin.signer)
      let ofBatch = this.pagePins.get(key)
      if (ofBatch === undefined) this.pagePins.set(key, (ofBatch = new Map()))
      // (batch, hash, signer, index) is unique among stored pins.
      if (!ofBatch.has(pin.index)) ofBatch.set(pin.index, pin)
    }
  }

  /** The batches read so far. */
  *read(): Iterable<BatchView> {
    for (const view of this.views.values()) if (view) yield view
  }

  /**
   * Checks off the main thread come back when they are done: send those of the batch's undecided messages along with
   * the first, in batch order, as one job (bounded, so that verdicts kept for later do not crowd out those needed now);
   * `settled`: those this pass decided already.
   */
  prefetch(view: BatchView, settled: (m: Message) => boolean): void {
    if (view.prefetched) return
    view.prefetched = true
    const items: Data[] = []
    for (const e of view.manifest.entries) {
      const m = view.messages.get(e.id)
      if (!m || m.state === 'confirmed' || m.state === 'rejected' || settled(m)) continue
      for (const r of m.data) {
        const d = view.data.get(refKey(r))
        if (d) items.push(d)
      }
      if (items.length >= PREFETCH_ITEMS) break
    }
    this.deps.validator.prefetch(view.record.namespace, items.slice(0, PREFETCH_ITEMS))
  }

  /** The batch, read once per pass; undefined when it is not stored here, or was refused. */
  viewOf(batchId: BatchId, batchHash: Hash): BatchView | undefined {
    const key = `${batchId}/${batchHash}`
    if (this.views.has(key)) return this.views.get(key)
    const { staged } = this
    if (staged?.is(batchId, batchHash)) {
      // Stored in this transaction, its rows not written yet: seen as the staged contents say (they are all new here).
      const view = { record: staged.record, ...staged.contents, pins: this.pinsOf(staged.record, staged.contents.manifest), carried: new Map(), prefetched: false }
      this.views.set(key, view)
      return view
    }
    const record = this.deps.batches.byIdHash(batchId, batchHash, this.tx)
    let view: BatchView | undefined
    if (record && record.state !== 'refused') {
      // Just stored, it is still in memory as stored (recent-batches.ts); read back otherwise.
      const held = this.deps.recent?.take(batchId, record.hash, record.manifest)
      const manifest = held?.manifest ?? new IndexedManifest(record.manifest)
      const pins = this.pinsOf(record, manifest)
      if (held) view = { record, ...held, pins, carried: new Map(), prefetched: false }
      else {
        // By id and hash: another message (or data item) may share an id with one of this batch's.
        const rows = this.deps.messages.byRefs(manifest.entries, this.tx)
        // A message held from another batch of its author is seen as this batch carried it (store-batch.ts), read only
        // for a batch that recorded some (batches.carried).
        const carried = new Map<string, Carried>()
        const recorded = record.carried === true ? this.deps.messages.carried.ofBatch(batchId, record.hash, this.tx) : undefined
        const messages = new Map(manifest.entries.flatMap((e) => {
          const m = rows.get(refKey(e))
          if (!m) return []
          const c = recorded?.get(e.id)
          if (c === undefined || c.hash !== e.hash) return [[e.id, m] as const]
          carried.set(e.id, c.carried)
          return [[e.id, asCarried(m, c.carried)] as const]
        }))
        const data = this.deps.data.byRefs([...messages.values()].flatMap((m) => m.data), this.tx)
        view = { record, manifest, pins, messages, data, carried, prefetched: false }
      }
    }
    this.views.set(key, view)
    return view
  }

  /**
   * The batch's pins by index, as the table holds them. The page was read just before this pass's transaction began,
   * with nothing in between, and only passes change a pin that is read here (its `dispatched`): when the page holds
   * a pin at every index the manifest gives a message, those are the pins a read would return for every index a pass
   * looks at (a pin past the manifest's, which a sender may have added on chain, belongs to no message). Otherwise
   * (a batch across two pages, some of its pins used already, a rewind's partial page) they are read.
   */
  private pinsOf(record: BatchRecord, manifest: IndexedManifest): Map<number, Pin> {
    const fromPage = this.pagePins.get(pinsKey(record.id, record.hash, record.key))
    const last = manifest.entries[manifest.entries.length - 1]
    const count = last === undefined ? 0 : last.firstPin + last.topics
    if (fromPage !== undefined && count > 0 && fromPage.size >= count) {
      let every = true
      for (let i = 0; i < count && every; i++) every = fromPage.has(i)
      if (every) return fromPage
    }
    return new Map(this.deps.pins.deciding(record.id, record.hash, record.key, this.tx).map((p) => [p.index, p]))
  }
}

/** The key of a batch's pins signed by one signer: batches sharing an id, and other signers' pins, are apart. */
function pinsKey(batchId: string, batchHash: string, signer: string): string {
  return `${batchId}/${batchHash}/${signer}`
}
