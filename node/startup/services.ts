import type { NodeConfig } from '../config.js'
import { Controls } from '../admin/controls.js'
import { DatatypeDefiner } from '../definitions/define-datatype.js'
import { DataUploader } from '../data/upload.js'
import { MessageTracer } from '../trace/trace.js'
import { DataPublisher } from '../data/publish.js'
import { DataRemover } from '../data/delete.js'
import { dataDigests } from '../data/digests.js'
import { NetworkMap } from '../identity/network-map.js'
import { Namespaces } from '../namespace/namespaces.js'
import type { Timestamp } from '../core/time.js'
import { DatabaseError } from '../db/errors.js'
import type { Identity } from '../model/index.js'
import type { NodeQueries, NodeServices, NodeStatus } from '../services.js'
import { VERSION } from '../version.js'
import type { NodeStore } from './store.js'
import type { Plugins } from './plugins.js'
import type { Managers } from './managers.js'

/**
 * Start-up phase 4: what the API serves, over the managers: read-only views of each collection, the send and
 * define capabilities, uploads, the test controls, message traces and the status. `started` is the start-up's
 * beginning, as /status reports it.
 */
export function apiServices(cfg: NodeConfig, store: NodeStore, plugins: Plugins, managers: Managers, started: string): NodeServices {
  const { messages, data, datatypes, events, batches, identities, blockchainEvents, groups, blobs, blobRefs, pins, deliveries, state } = store.repos
  const { blobStore, gate, db } = store
  const { self, gates, peers, chain, storage } = plugins
  const { aggregator, batchManager, deliveryQueue, sender, subscriptions, enrichEvents, validator } = managers
  const { identity } = self

  // Read-only views for the API: each collection's query functions, never a repository's writes.
  const query: NodeQueries = {
    messages,
    data,
    dataDigests: (list) => dataDigests(list, (refs) => data.byRefs(refs)),
    datatypes,
    events: { list: (q) => events.list(q), enrich: enrichEvents },
    batches,
    identities,
    blockchainEvents,
    groups,
    transactions: store.repos.transactions,
    operations: store.repos.operations,
    heldBlob: async (hash) => (blobs.has(hash) ? await blobStore.read(hash) : undefined),
  }
  let known: { cursor: number; org: Identity | undefined; node: Identity | undefined } = { cursor: cfg.chain.firstBlock, org: undefined, node: undefined }
  return {
    config: cfg,
    version: VERSION,
    query,
    sender,
    datatypeDefiner: new DatatypeDefiner({ datatypes, sender }),
    uploader: new DataUploader({ db, data, blobs, blobStore, validator, gate, maxBlobBytes: cfg.limits.uploadBytes, maxValueBytes: cfg.limits.valueBytes }),
    publisher: new DataPublisher({ db, data, refs: blobRefs, blobs, transactions: store.repos.transactions, operations: store.repos.operations, blobStore, storage }),
    dataRemover: new DataRemover({ db, data, blobs }),
    networkMap: new NetworkMap(identities),
    namespaces: new Namespaces({ repo: store.repos.namespaces, started: started as Timestamp }),
    subscriptions,
    controls: new Controls({
      org: cfg.org,
      deliveries: gates.deliveries,
      pendingTo: (org) => deliveryQueue.pendingTo(org),
      chain: gates.chainReads,
      ipfs: gates.ipfsReads,
      identities,
      messages,
      batches,
    }),
    // Message traces: the stored timeline, the aggregator's reasons, the sender's batches on their way.
    tracer: new MessageTracer({
      messages, batches, pins, blockchainEvents, identities, groups, data, blobs, refs: blobRefs, deliveries, events, self: identity,
      explain: (message, batch) => aggregator.explain(message, batch),
      progress: (id) => batchManager.progress.of(id),
      deliveryControl: (batchId, peer) => {
        const org = peers.peerOf(peer)?.org
        const verdict = org ? gates.deliveries.verdict(batchId, org) : 'open'
        return verdict === 'open' ? undefined : verdict
      },
    }),
    async status(ns): Promise<NodeStatus> {
      const database = db.status()
      // While the database server is away, /status still answers, with what was last read and `healthy: false`.
      if (database.healthy) {
        try {
          known = { cursor: state.chainCursor() ?? cfg.chain.firstBlock, org: identities.byDid(identity.orgDid), node: identities.byDid(identity.nodeDid) }
        } catch (err) {
          if (!(err instanceof DatabaseError && err.code === 'DB_UNAVAILABLE')) throw err
        }
      }
      const { cursor, org, node } = known
      const chainStatus = { ...chain.status(), lastProcessedBlock: cursor - 1 }
      const ipfs = await storage.probe()
      const held = gate.status()
      return {
        namespace: { name: ns, networkName: ns },
        org: { name: cfg.org, did: identity.orgDid, key: self.key, registered: org !== undefined, ...(org ? { id: org.id } : {}) },
        node: { name: cfg.node, did: identity.nodeDid, registered: node !== undefined, ...(node ? { id: node.id } : {}), p2p: self.p2pUrl },
        chain: chainStatus,
        ipfs,
        database: { ...held.capacity, ...database },
        storage: held.storage,
        // Not while it cannot store what it is asked to, nor while it cannot reach its database, the chain or shared storage.
        healthy: held.storage.condition === 'ok' && database.healthy && chainStatus.connected && ipfs.connected,
        multiparty: { enabled: true, contract: { active: { index: 0, location: { address: cfg.chain.contract }, firstEvent: cfg.chain.firstBlock } } },
        version: VERSION,
        started,
      }
    },
  }
}
