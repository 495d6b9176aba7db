import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Wallet } from 'ethers'
import type { NodeConfig } from './config.js'
import { Database } from './db/database.js'
import { migrations } from './db/schema/index.js'
import { StorageGate } from './db/capacity.js'
import { openRepositories } from './db/repos/index.js'
import { BlobStore } from './data/blob-store.js'
import { BlobReceiver } from './data/blob-receiver.js'
import { createChain, type Chain } from './chain/index.js'
import { useSmallSigningTables } from './chain/signing-tables.js'
import { createIpfsStorage } from './storage/ipfs.js'
import type { SharedStorage } from './storage/shared-storage.js'
import { startApiServer, type ApiServer } from './api/server.js'
import { createExchange, type Peer } from './exchange/index.js'
import { parseBatch, serializeBatch } from './batch/payload.js'
import { DeliveryQueue } from './messaging/delivery-queue.js'
import { DeliveryGate } from './messaging/delivery-gate.js'
import { Gate } from './core/gate.js'
import { Controls } from './admin/controls.js'
import { PrivateReceiver } from './aggregator/private-receiver.js'
import { PrivateDispatcher } from './batch/private-dispatcher.js'
import { BatchManager, rebuildSealed } from './batch/manager.js'
import { PrivateChecks } from './aggregator/private-check.js'
import { groupinitHandler } from './definitions/groupinit.js'
import { GroupResolver } from './identity/group-resolver.js'
import { ParleyError } from './core/errors.js'
import { DataPublisher } from './data/publish.js'
import { DataRemover } from './data/delete.js'
import { NetworkMap } from './identity/network-map.js'
import { Namespaces } from './namespace/namespaces.js'
import { OperationRecorder } from './operations/recorder.js'
import type { NodeQueries, NodeServices, NodeStatus } from './services.js'
import { now } from './core/time.js'
import { errorMessage } from './core/errors.js'
import { startAll, type Component } from './core/lifecycle.js'
import { VERSION } from './version.js'
import { localIdentity, nodeProfileOf } from './model/index.js'
import { identityClaimHandler } from './definitions/identity-claim.js'
import { registerSelf } from './definitions/registration.js'
import { datatypeDefinitionHandler } from './definitions/datatype.js'
import { DatatypeDefiner } from './definitions/define-datatype.js'
import { MessageSender } from './messaging/sender.js'
import { DEFAULT_BATCH_CONFIG } from './batch/config.js'
import { BlobPublisher } from './batch/blob-publisher.js'
import { Aggregator } from './aggregator/aggregator.js'
import { BatchFetcher } from './aggregator/batch-fetcher.js'
import { RecentBatches } from './aggregator/recent-batches.js'
import { pinIngest } from './aggregator/pin-ingest.js'
import { BlobFetcher } from './data/blob-fetcher.js'
import { DataValidatorImpl } from './data/validator.js'
import { datatypeLookup } from './data/schema-cache.js'
import { DataUploader } from './data/upload.js'
import { Confirmations, createEventStreams, SubscriptionManager } from './events/index.js'
import { claimPendingBefore } from './identity/pending.js'
import { createEventEnricher, WebSocketTransport } from './events/index.js'
import { eventFrameRenderer } from './api/present.js'
import { MessageTracer } from './trace/trace.js'

export interface RunningNode {
  api: string
  p2p: string
  services: NodeServices
  chain: Chain
  storage: SharedStorage
  db: Database
  stop(): Promise<void>
}

/**
 * Assembles a member node: its database, its seams (chain, shared storage, p2p), its capabilities (send, batch,
 * aggregate, identity) and its API; then registers the member through the chain if it has not yet. Components
 * start in dependency order and stop in reverse, each waiting for its work in flight, the database last.
 */
export async function startNode(cfg: NodeConfig, log: (line: string) => void): Promise<RunningNode> {
  const started = now()
  useSmallSigningTables()
  const db = await Database.open({ dir: join(cfg.dataDir, 'db'), migrations, log, ...(cfg.dbTemplate !== undefined ? { template: cfg.dbTemplate } : {}) })
  // The database's ceiling and the disk's room, for new sends and uploads and for /status.
  const gate = new StorageGate(db, log)
  const repos = openRepositories(db)
  const { state, blockchainEvents, messages, data, batches, pins, events, identities, blobs, blobRefs, datatypes, groups, nonces, deliveries, nextpins } = repos
  const blobStore = await BlobStore.open(join(cfg.dataDir, 'blobs'))
  const swept = await blobStore.sweep((hash) => blobs.has(hash))
  if (swept > 0) log(`blobs: removed ${swept} blob file(s) that no data item holds (uploads refused after their blob was written)`)
  const key = new Wallet(cfg.signingKey).address.toLowerCase()
  const self = localIdentity(cfg.org, cfg.node, key)
  const cert = readFileSync(cfg.p2p.cert, 'utf8')
  const p2pUrl = `https://${cfg.p2p.host}:${cfg.p2p.port}`

  // The test controls' switches (served through the admin routes when cfg.admin): in memory, open at every start.
  const deliveryGate = new DeliveryGate()
  const chainReads = new Gate()
  const ipfsReads = new Gate()

  const confirmations = new Confirmations()
  // Readers of the event log (WebSocket deliveries, the console) wake when the aggregator's events are durable.
  const eventStreams = createEventStreams((ns, after, limit) => events.after(ns, after, limit), { durableThrough: events.lastSequence() })
  // Verdicts reached off the main thread may let waiting messages be decided: walk the waiting pins again.
  const validator = new DataValidatorImpl(datatypeLookup(datatypes), { settled: () => aggregator.blobSettled() })
  const storage = createIpfsStorage({ api: cfg.ipfs.api, gateway: cfg.ipfs.gateway, log })

  // The p2p endpoint: private batches and blobs to and from the other members' nodes.
  const exchange = createExchange({ host: cfg.p2p.host, port: cfg.p2p.port, cert, key: readFileSync(cfg.p2p.key, 'utf8'), log, codec: { parse: parseBatch, serialize: serializeBatch } })
  // Every registered node as a peer, by the endpoint and certificate its claim published, and its owning org.
  const peers = (): Peer[] =>
    identities.all('node').flatMap((n) => {
      const profile = nodeProfileOf(n)
      const org = n.parent ? identities.byId(n.parent) : undefined
      return profile && org ? [{ node: n.did, org: org.name, endpoint: profile.endpoint, cert: profile.cert }] : []
    })
  // Read from the database only when a node identity is confirmed (and at start), not on every delivery attempt.
  let peersByNode: Map<string, Peer> | undefined
  const index = (list: Peer[]): Map<string, Peer> => (peersByNode = new Map(list.map((p) => [p.node, p])))
  // Who may connect: called at start and whenever an identity is confirmed.
  const trustPeers = (): void => {
    const list = peers()
    index(list)
    exchange.trust(list)
  }
  const peerOf = (did: string): Peer | undefined => (peersByNode ?? index(peers())).get(did)

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
      identityClaimHandler(identities, () => trustPeers()),
      datatypeDefinitionHandler({ datatypes, identities, claimPending: (tx, did, seq) => claimPendingBefore(pins, tx, did, seq) }),
      groupinitHandler(groups),
    ],
    privateChecks: new PrivateChecks({ nextpins, groups, identities }),
    log,
    onOutcome: ({ confirmed, rejected, events: written }) => {
      for (const m of confirmed) confirmations.confirmed(m)
      for (const r of rejected) confirmations.rejected(r.message, r.reason)
      eventStreams.published(written)
    },
  })
  const blobFetcher = new BlobFetcher({ db, data, blobs, refs: blobRefs, blobStore, storage, log, settled: () => aggregator.blobSettled(), reads: ipfsReads })
  const batchFetcher = new BatchFetcher({
    db,
    batches,
    pins,
    messages,
    data,
    storage,
    log,
    recent,
    arrived: (id) => aggregator.batchArrived(id),
    announced: (wanted) => wanted.forEach((b) => blobFetcher.want(b)),
    reads: ipfsReads,
  })
  const chain = createChain({
    rpc: cfg.chain.rpc,
    contract: cfg.chain.contract,
    privateKey: cfg.signingKey,
    fromBlock: state.chainCursor() ?? cfg.chain.firstBlock,
    log,
    readGate: chainReads,
    onEvents: pinIngest({ db, state, blockchainEvents, pins, events, published: (written) => eventStreams.published(written), fetch: (b) => batchFetcher.fetch(b), wake: () => aggregator.wake() }),
  })
  const receiver = new PrivateReceiver({
    db,
    batches,
    messages,
    data,
    groups,
    identities,
    self,
    recent,
    arrived: (id) => aggregator.batchArrived(id),
    unpinned: { blobs, validator, events, published: (written) => eventStreams.published(written) },
  })
  exchange.onBatch(receiver.handle)
  // Private blobs, streamed here by a member before the batch that refers to them.
  exchange.onBlob(new BlobReceiver({ db, blobs, blobStore, registered: (node) => peerOf(node) !== undefined, stored: () => aggregator.blobSettled(), log }).handle)
  // The steps handed to the chain, shared storage and the exchange, recorded as FireFly's operations.
  const operationRecorder = new OperationRecorder({ operations: repos.operations, identities })
  const deliveryQueue = new DeliveryQueue({
    db,
    deliveries,
    exchange,
    peerOf,
    blob: (hash) => (blobs.has(hash) ? blobStore.content(hash) : undefined),
    load: (id) => {
      const b = batches.get(id)
      return b ? rebuildSealed({ messages, data }, b).payload : undefined
    },
    log,
    gate: deliveryGate,
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
    self,
    config: { ...DEFAULT_BATCH_CONFIG, ...cfg.batch },
    blobs: new BlobPublisher({ db, data, refs: blobRefs, blobStore, storage, operationRecorder }),
    log,
    dispatchers: [new PrivateDispatcher({ messages, nonces, groups, identities, self, delivery: deliveryQueue })],
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
    self,
    sink: batchManager,
    validator,
    confirmations,
    gate,
    unpinned: { events, published: (written) => eventStreams.published(written) },
    privateGroups: { resolver: new GroupResolver({ identities, groups, self }), repo: groups },
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

  // Read-only views for the API: each collection's query functions, never a repository's writes.
  const query: NodeQueries = {
    messages,
    data,
    datatypes,
    events: { list: (q) => events.list(q), enrich: enrichEvents },
    batches,
    identities,
    blockchainEvents,
    groups,
    transactions: repos.transactions,
    operations: repos.operations,
    heldBlob: async (hash) => (blobs.has(hash) ? await blobStore.read(hash) : undefined),
  }
  const services: NodeServices = {
    config: cfg,
    version: VERSION,
    query,
    sender,
    datatypeDefiner: new DatatypeDefiner({ datatypes, sender }),
    uploader: new DataUploader({ db, data, blobs, blobStore, validator, gate, maxBlobBytes: cfg.limits.uploadBytes, maxValueBytes: cfg.limits.valueBytes }),
    publisher: new DataPublisher({ db, data, refs: blobRefs, blobs, transactions: repos.transactions, operations: repos.operations, blobStore, storage }),
    dataRemover: new DataRemover({ db, data, blobs }),
    networkMap: new NetworkMap(identities),
    namespaces: new Namespaces({ repo: repos.namespaces, started }),
    subscriptions,
    controls: new Controls({
      org: cfg.org,
      deliveries: deliveryGate,
      pendingTo: (org) => deliveryQueue.pendingTo(org),
      chain: chainReads,
      ipfs: ipfsReads,
      identities,
      messages,
      batches,
    }),
    // Message traces: the stored timeline, the aggregator's reasons, the sender's batches on their way.
    tracer: new MessageTracer({
      messages, batches, pins, blockchainEvents, identities, groups, data, blobs, refs: blobRefs, deliveries, events, self,
      explain: (message, batch) => aggregator.explain(message, batch),
      progress: (id) => batchManager.progress.of(id),
      deliveryControl: (batchId, peer) => {
        const org = peerOf(peer)?.org
        const verdict = org ? deliveryGate.verdict(batchId, org) : 'open'
        return verdict === 'open' ? undefined : verdict
      },
    }),
    async status(ns): Promise<NodeStatus> {
      const cursor = state.chainCursor() ?? cfg.chain.firstBlock
      const org = identities.byDid(self.orgDid)
      const node = identities.byDid(self.nodeDid)
      const chainStatus = { ...chain.status(), lastProcessedBlock: cursor - 1 }
      const ipfs = await storage.probe()
      const held = gate.status()
      return {
        namespace: { name: ns, networkName: ns },
        org: { name: cfg.org, did: self.orgDid, key, registered: org !== undefined, ...(org ? { id: org.id } : {}) },
        node: { name: cfg.node, did: self.nodeDid, registered: node !== undefined, ...(node ? { id: node.id } : {}), p2p: p2pUrl },
        chain: chainStatus,
        ipfs,
        database: held.capacity,
        storage: held.storage,
        // Not while it cannot store what it is asked to, nor while it cannot reach the chain or shared storage.
        healthy: held.storage.condition === 'ok' && chainStatus.connected && ipfs.connected,
        multiparty: { enabled: true, contract: { active: { index: 0, location: { address: cfg.chain.contract }, firstEvent: cfg.chain.firstBlock } } },
        version: VERSION,
        started,
      }
    },
  }

  // Reads the size now and then, so that crossing the warning share or the ceiling is logged even with no sends.
  let capacityWatch: NodeJS.Timeout | undefined

  let api: ApiServer | undefined
  let registration: Promise<void> = Promise.resolve()
  const registrationStop = new AbortController()
  const components: Component[] = [
    { name: 'shared storage', start: () => storage.start(), stop: () => storage.stop() },
    {
      name: 'capacity watch',
      start: () => {
        capacityWatch = setInterval(() => gate.status(), 60_000)
        capacityWatch.unref()
      },
      stop: async () => clearInterval(capacityWatch),
    },
    { name: 'event streams', start: () => {}, stop: () => eventStreams.stop() },
    // Stops after the aggregator and the API, which may wait on its checks.
    { name: 'validation worker', start: () => {}, stop: () => validator.stop() },
    aggregator,
    batchFetcher,
    blobFetcher,
    { name: 'chain', start: () => chain.start(), stop: () => chain.stop() },
    // Started after the chain so that it stops before it: the pin submission it waits on is abandoned by its own
    // signal rather than cut off by the chain going away.
    {
      name: 'p2p exchange',
      start: async () => {
        trustPeers()
        await exchange.start()
      },
      stop: () => exchange.stop(),
    },
    // After the exchange (it sends through it) and before the batch manager (whose private dispatches wait on it).
    deliveryQueue,
    batchManager,
    {
      name: 'api',
      start: async () => {
        api = await startApiServer({ host: cfg.api.host, port: cfg.api.port, services, log, onUpgrade: (req, socket, head) => eventSockets.handleUpgrade(req, socket, head) })
      },
      stop: async () => api?.close(),
    },
    // Listed after the API so that it stops first: its sockets close before the server waits for its connections.
    { name: 'event sockets', start: () => eventSockets.start(), stop: () => eventSockets.stop() },
    {
      name: 'registration',
      start: () => {
        // It retries each failed step itself; the catch is for a bug, so that it is a log line and not a crash.
        registration = registerSelf({ db, identities, state, sender, self, profile: { id: `${cfg.org}/${cfg.node}`, endpoint: p2pUrl, cert }, log, signal: registrationStop.signal }).catch(
          (err: unknown) => log(`identity: registration failed: ${errorMessage(err)}`),
        )
      },
      stop: () => {
        registrationStop.abort()
        return registration
      },
    },
  ]

  let stopComponents: () => Promise<void>
  try {
    stopComponents = await startAll(components, log)
  } catch (err) {
    await db.close()
    throw err
  }
  log(`node ${cfg.node} of ${cfg.org} (key ${key}) serving ${api!.url}, p2p ${p2pUrl}`)

  return {
    api: api!.url,
    p2p: p2pUrl,
    services,
    chain,
    storage,
    db,
    async stop() {
      // Work that waits for a full disk to have room is abandoned (it was never acknowledged), so stopping never
      // waits for space that may not come.
      db.stopWaitingForSpace()
      await stopComponents()
      await db.close()
    },
  }
}
