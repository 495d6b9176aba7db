import type { NodeConfig } from '../config.js'
import { BlobReceiver } from '../data/blob-receiver.js'
import { DeliveryQueue } from '../messaging/delivery-queue.js'
import { PrivateReceiver } from '../aggregator/private-receiver.js'
import { UnpinnedExpiry } from '../aggregator/unpinned-expiry.js'
import { UnpinnedBatchQuota } from '../aggregator/unpinned-quota.js'
import { orgOfDid } from '../model/index.js'
import { PrivateDispatcher } from '../batch/private-dispatcher.js'
import { BatchManager, rebuildSealed } from '../batch/manager.js'
import { PrivateChecks } from '../aggregator/private-check.js'
import { groupinitHandler } from '../definitions/groupinit.js'
import { GroupResolver } from '../identity/group-resolver.js'
import { identityClaimHandler } from '../definitions/identity-claim.js'
import { datatypeDefinitionHandler } from '../definitions/datatype.js'
import { MessageSender } from '../messaging/sender.js'
import { DEFAULT_BATCH_CONFIG } from '../batch/config.js'
import { BlobPublisher } from '../batch/blob-publisher.js'
import { OperationRecorder } from '../operations/recorder.js'
import { Aggregator } from '../aggregator/aggregator.js'
import { BatchFetcher } from '../aggregator/batch-fetcher.js'
import { RecentBatches } from '../aggregator/recent-batches.js'
import { pinIngest } from '../aggregator/pin-ingest.js'
import { BlobFetcher } from '../data/blob-fetcher.js'
import { DataValidatorImpl } from '../data/validator.js'
import { datatypeLookup } from '../data/schema-cache.js'
import { Confirmations, createEventEnricher, createEventStreams, SubscriptionManager, WebSocketTransport, type EventEnricher, type EventStreams } from '../events/index.js'
import { claimPendingBefore } from '../identity/pending.js'
import { eventFrameRenderer } from '../api/present.js'
import type { NodeStore } from './store.js'
import type { PluginCallbacks, Plugins } from './plugins.js'

/** The capabilities built over the store and the plugins, as FireFly's managers. */
export interface Managers extends PluginCallbacks {
  confirmations: Confirmations
  eventStreams: EventStreams
  validator: DataValidatorImpl
  aggregator: Aggregator
  batchFetcher: BatchFetcher
  blobFetcher: BlobFetcher
  deliveryQueue: DeliveryQueue
  batchManager: BatchManager
  sender: MessageSender
  subscriptions: SubscriptionManager
  enrichEvents: EventEnricher
  eventSockets: WebSocketTransport
  /** Deletes private batches delivered here that no pin named within `quotas.unpinnedBatchMs`. */
  unpinnedExpiry: UnpinnedExpiry
}

/**
 * Start-up phase 3: the managers (aggregate, fetch, receive, deliver, batch, send, subscribe, deliver events), built
 * over the store and the plugins and not started; the exchange's handlers for private batches and blobs are set
 * here. Returns, with them, the handler the chain calls with the BatchPin events it reads.
 */
export function initManagers(cfg: NodeConfig, store: NodeStore, plugins: Plugins, log: (line: string) => void): Managers {
  const { db, repos, gate, blobStore, unreferencedBlobs } = store
  const { state, blockchainEvents, messages, data, batches, pins, events, identities, blobs, blobRefs, datatypes, groups, nonces, deliveries, nextpins } = repos
  const { self, storage, exchange, peers, chain, gates } = plugins

  const confirmations = new Confirmations()
  // Readers of the event log (WebSocket deliveries, the console) wake when the aggregator's events are durable.
  const eventStreams = createEventStreams((ns, after, limit) => events.after(ns, after, limit), { durableThrough: events.lastSequence() })
  // Verdicts reached off the main thread may let waiting messages be decided: walk the waiting pins again.
  const validator = new DataValidatorImpl(datatypeLookup(datatypes), { settled: () => aggregator.blobSettled() })

  // Batches just stored (received, or sealed here), kept for the aggregator's first walk of them instead of read back.
  const recent = new RecentBatches()
  const aggregator = new Aggregator({
    db,
    recent,
    pins,
    batches,
    messages,
    data,
    events,
    identities,
    blobs,
    refs: blobRefs,
    validator,
    definitions: [
      identityClaimHandler(identities, () => peers.trust(), (tx, seq) => pins.lastOfEvent(tx, seq)),
      datatypeDefinitionHandler({ datatypes, identities, claimPending: (tx, did, seq) => claimPendingBefore(pins, tx, did, seq) }),
      groupinitHandler({ groups, identities, claimPending: (tx, did, seq) => claimPendingBefore(pins, tx, did, seq), signerPending: (tx, key, seq) => pins.earlierUndispatchedBySigner(tx, key, seq) }),
    ],
    privateChecks: new PrivateChecks({ nextpins, pins, groups, identities }),
    wantBlob: (b) => blobFetcher.want(b),
    log,
    onOutcome: ({ confirmed, rejected, events: written }) => {
      for (const m of confirmed) confirmations.confirmed(m)
      for (const r of rejected) confirmations.rejected(r.message, r.reason)
      eventStreams.published(written)
    },
  })
  const blobFetcher = new BlobFetcher({ db, data, blobs, refs: blobRefs, blobStore, storage, log, settled: () => aggregator.blobSettled(), reads: gates.ipfsReads })
  const batchFetcher = new BatchFetcher({
    db,
    batches,
    pins,
    identities,
    storage,
    log,
    receive: (b, manifest, payloadRef) => aggregator.receive(b, manifest, payloadRef),
    refused: (p) => aggregator.pinEventRefused(p),
    announced: (wanted) => wanted.forEach((b) => blobFetcher.want(b)),
    reads: gates.ipfsReads,
  })
  // Private batches peers delivered that no pin names yet, per org: counted from the database once, here.
  const unpinnedQuota = new UnpinnedBatchQuota(
    { limitBytes: cfg.quotas.unpinnedBatchBytesPerOrg, keepMs: cfg.quotas.unpinnedBatchMs },
    repos.unpinnedBatches.charges().map((c) => ({ ...c, org: orgOfDid(c.author) })),
  )
  const chainEvents = pinIngest({
    db,
    state,
    blockchainEvents,
    pins,
    events,
    published: (written) => eventStreams.published(written),
    fetch: (b) => batchFetcher.fetch(b),
    wake: () => aggregator.wake(),
    privatePinned: (id, hash, signer) => unpinnedQuota.pinned(id, hash, signer),
  })

  const receiver = new PrivateReceiver({
    db,
    batches,
    messages,
    data,
    groups,
    identities,
    self: self.identity,
    recent,
    arrived: (id, hash) => aggregator.batchArrived(id, hash),
    unpinned: { blobs, validator, events, published: (written) => eventStreams.published(written) },
    quota: { batches: unpinnedQuota, pins },
  })
  exchange.onBatch(receiver.handle, receiver.admit)
  // Private blobs, streamed here by a member before the batch that refers to them.
  exchange.onBlob(new BlobReceiver({ db, blobs, blobStore, quota: unreferencedBlobs, registered: (node) => peers.peerOf(node) !== undefined, stored: () => aggregator.blobSettled(), log }).handle)
  const unpinnedExpiry = new UnpinnedExpiry({
    db,
    repo: repos.unpinnedBatches,
    pins,
    messages,
    data,
    blobs,
    received: repos.receivedBlobs,
    blobStore,
    recent,
    keepMs: cfg.quotas.unpinnedBatchMs,
    passed: (id, hash) => unpinnedQuota.forget(id, hash),
    caughtUp: () => {
      const s = chain.status()
      return s.connected && s.headBlock !== undefined && s.lastProcessedBlock >= s.headBlock
    },
    log,
  })
  // The steps handed to the chain, shared storage and the exchange, recorded as FireFly's operations.
  const operationRecorder = new OperationRecorder({ operations: repos.operations, identities })
  const deliveryQueue = new DeliveryQueue({
    db,
    deliveries,
    exchange,
    peerOf: (did) => peers.peerOf(did),
    blob: (hash) => (blobs.has(hash) ? blobStore.content(hash) : undefined),
    load: (id) => {
      const b = batches.local(id)
      return b ? rebuildSealed({ messages, data }, b).payload : undefined
    },
    log,
    gate: gates.deliveries,
    operationRecorder,
  })
  const batchManager = new BatchManager({
    db,
    messages,
    data,
    batches,
    events,
    published: (written) => eventStreams.published(written),
    storage,
    chain,
    self: self.identity,
    config: { ...DEFAULT_BATCH_CONFIG, ...cfg.batch },
    blobs: new BlobPublisher({ db, data, refs: blobRefs, blobStore, storage, operationRecorder }),
    log,
    dispatchers: [new PrivateDispatcher({ messages, nonces, groups, identities, self: self.identity, delivery: deliveryQueue })],
    recent,
    operationRecorder,
  })
  const sender = new MessageSender({
    db,
    messages,
    data,
    blobs,
    refs: blobRefs,
    identities,
    self: self.identity,
    sink: batchManager,
    validator,
    confirmations,
    gate,
    unpinned: { events, published: (written) => eventStreams.published(written) },
    privateGroups: { resolver: new GroupResolver({ identities, groups, self: self.identity }), repo: groups },
  })

  // Durable subscriptions: `newest` locks in the log's last sequence at creation.
  const subscriptions = new SubscriptionManager({ db, repo: repos.subscriptions, lastSequence: () => events.lastSequence(), log })
  // Events with the objects they refer to, one query per kind for a whole page (the API's fetchreferences).
  const enrichEvents = createEventEnricher({ messages, datatypes, identities, transactions: repos.transactions, blockchainEvents })
  // Events over WebSockets on the API's port: ephemeral listeners and the durable subscriptions above.
  const eventSockets = new WebSocketTransport({
    streams: eventStreams,
    enrich: enrichEvents,
    render: eventFrameRenderer({ contract: cfg.chain.contract }),
    directory: subscriptions,
    saveOffset: (id, offset) => subscriptions.setOffset(id, offset),
    lastSequence: () => events.lastSequence(),
    log,
  })
  subscriptions.durable = (id) => eventSockets.durableOffset(id)

  return { confirmations, eventStreams, validator, aggregator, batchFetcher, blobFetcher, deliveryQueue, batchManager, sender, subscriptions, enrichEvents, eventSockets, chainEvents, unpinnedExpiry }
}
