import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Wallet } from 'ethers'
import type { NodeConfig } from './config.js'
import { Database } from './db/database.js'
import { migrations } from './db/schema/index.js'
import { NodeStateRepo } from './db/repos/node-state.js'
import { BlockchainEventsRepo } from './db/repos/blockchain-events.js'
import { MessagesRepo } from './db/repos/messages.js'
import { DataRepo } from './db/repos/data.js'
import { BatchesRepo } from './db/repos/batches.js'
import { PinsRepo } from './db/repos/pins.js'
import { EventsRepo } from './db/repos/events.js'
import { IdentitiesRepo } from './db/repos/identities.js'
import { BlobsRepo } from './db/repos/blobs.js'
import { BlobRefsRepo } from './db/repos/blob-refs.js'
import { BlobStore } from './data/blob-store.js'
import { createChain } from './chain/index.js'
import type { Chain } from './chain/types.js'
import { createIpfsStorage } from './storage/ipfs.js'
import type { SharedStorage } from './storage/shared-storage.js'
import { startApiServer, type ApiServer } from './api/server.js'
import { startP2pServer, type P2pServer } from './exchange/p2p-server.js'
import type { NodeServices, NodeStatus } from './services.js'
import { now } from './core/time.js'
import { errorMessage } from './core/errors.js'
import { VERSION } from './version.js'
import { identityClaimHandler } from './definitions/identity-claim.js'
import { registerSelf } from './definitions/registration.js'
import { MessageSender } from './messaging/sender.js'
import { BatchManager } from './batch/manager.js'
import { DEFAULT_BATCH_CONFIG } from './batch/config.js'
import { Aggregator } from './aggregator/aggregator.js'
import { BatchFetcher } from './aggregator/batch-fetcher.js'
import { BlobFetcher } from './data/blob-fetcher.js'
import { BlobPublisher } from './batch/blob-publisher.js'
import { pinIngest } from './aggregator/pin-ingest.js'
import { Confirmations } from './events/confirmations.js'
import { DataValidatorImpl } from './data/validator.js'
import { DatatypesRepo } from './db/repos/datatypes.js'
import { datatypeLookup } from './data/schema-cache.js'
import { datatypeDefinitionHandler } from './definitions/datatype.js'
import { DatatypeDefiner } from './definitions/define-datatype.js'
import { claimPendingBefore } from './identity/pending.js'
import { DataUploader } from './data/upload.js'
import { localIdentity, type NodeProfile } from './model/index.js'

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
 * aggregate, identity) and its API; then registers the member through the chain if it has not yet.
 */
export async function startNode(cfg: NodeConfig, log: (line: string) => void): Promise<RunningNode> {
  const started = now()
  const db = await Database.open({ dir: join(cfg.dataDir, 'db'), migrations })
  const state = new NodeStateRepo(db)
  const blockchainEvents = new BlockchainEventsRepo(db)
  const messages = new MessagesRepo(db)
  const data = new DataRepo(db)
  const batches = new BatchesRepo(db)
  const pins = new PinsRepo(db)
  const events = new EventsRepo(db)
  const identities = new IdentitiesRepo(db)
  const blobs = new BlobsRepo(db)
  const blobRefs = new BlobRefsRepo(db)
  const datatypes = new DatatypesRepo(db)
  const blobStore = await BlobStore.open(join(cfg.dataDir, 'blobs'))
  const swept = await blobStore.sweep((hash) => blobs.has(hash))
  if (swept > 0) log(`blobs: removed ${swept} blob file(s) that no data item holds (uploads refused after their blob was written)`)
  const key = new Wallet(cfg.signingKey).address.toLowerCase()
  const self = localIdentity(cfg.org, cfg.node, key)
  const cert = readFileSync(cfg.p2p.cert, 'utf8')
  const p2pUrl = `https://${cfg.p2p.host}:${cfg.p2p.port}`

  const confirmations = new Confirmations()
  const validator = new DataValidatorImpl(datatypeLookup(datatypes))
  const storage = createIpfsStorage({ api: cfg.ipfs.api, gateway: cfg.ipfs.gateway, log })

  let p2p: P2pServer | undefined
  const trustPeers = (): void => {
    const certs = identities.all('node').flatMap((n) => (n.profile && typeof (n.profile as NodeProfile).cert === 'string' ? [(n.profile as NodeProfile).cert] : []))
    p2p?.trust(certs)
  }

  const aggregator = new Aggregator({
    db,
    pins,
    batches,
    messages,
    data,
    events,
    identities,
    blobs,
    refs: blobRefs,
    validator,
    definitions: [identityClaimHandler(identities, () => trustPeers()), datatypeDefinitionHandler({ datatypes, identities, claimPending: (tx, did, seq) => claimPendingBefore(pins, tx, did, seq) })],
    log,
    onOutcome: ({ confirmed, rejected }) => {
      for (const m of confirmed) confirmations.confirmed(m)
      for (const r of rejected) confirmations.rejected(r.message, r.reason)
    },
  })
  const blobFetcher = new BlobFetcher({ db, data, blobs, refs: blobRefs, blobStore, storage, log, settled: () => aggregator.rewind(pins.minUndispatchedSeq()) })
  const fetcher = new BatchFetcher({
    db,
    batches,
    messages,
    data,
    storage,
    log,
    arrived: (id) => aggregator.rewind(pins.minUndispatchedSeqOfBatch(id)),
    announced: (wanted) => wanted.forEach((b) => blobFetcher.want(b)),
  })

  const chain = createChain({
    rpc: cfg.chain.rpc,
    contract: cfg.chain.contract,
    privateKey: cfg.signingKey,
    fromBlock: state.chainCursor() ?? cfg.chain.firstBlock,
    log,
    onEvents: pinIngest({ db, state, blockchainEvents, pins, fetch: (b) => fetcher.fetch(b), wake: () => aggregator.wake() }),
  })

  const batchManager = new BatchManager({ db, messages, data, batches, storage, chain, self, config: { ...DEFAULT_BATCH_CONFIG, ...cfg.batch }, blobs: new BlobPublisher({ db, data, refs: blobRefs, blobStore, storage }), log })
  const sender = new MessageSender({ db, messages, data, blobs, refs: blobRefs, identities, self, sink: batchManager, validator, confirmations })

  const services: NodeServices = {
    config: cfg,
    version: VERSION,
    sender,
    blockchainEvents,
    messages,
    data,
    identities,
    events,
    batches,
    blobs,
    blobStore,
    datatypes,
    datatypeDefiner: new DatatypeDefiner({ datatypes, sender }),
    uploader: new DataUploader({ db, data, blobs, blobStore, validator }),
    async status(ns): Promise<NodeStatus> {
      const cursor = state.chainCursor() ?? cfg.chain.firstBlock
      const org = identities.byDid(self.orgDid)
      const node = identities.byDid(self.nodeDid)
      return {
        namespace: { name: ns, networkName: ns },
        org: { name: cfg.org, did: self.orgDid, key, registered: org !== undefined, ...(org ? { id: org.id } : {}) },
        node: { name: cfg.node, did: self.nodeDid, registered: node !== undefined, ...(node ? { id: node.id } : {}), p2p: p2pUrl },
        chain: { ...chain.status(), lastProcessedBlock: cursor - 1 },
        ipfs: await storage.probe(),
        multiparty: { enabled: true, contract: { active: { index: 0, location: { address: cfg.chain.contract }, firstEvent: cfg.chain.firstBlock } } },
        version: VERSION,
        started,
      }
    },
  }

  let api: ApiServer | undefined
  try {
    api = await startApiServer({ host: cfg.api.host, port: cfg.api.port, services, log })
    p2p = await startP2pServer({ host: cfg.p2p.host, port: cfg.p2p.port, cert, key: readFileSync(cfg.p2p.key, 'utf8') })
  } catch (err) {
    await api?.close()
    await db.close()
    throw err
  }
  trustPeers()
  aggregator.start()
  fetcher.resume()
  blobFetcher.resume()
  batchManager.start()
  chain.start()
  storage.start()
  log(`node ${cfg.node} of ${cfg.org} (key ${key}) serving ${api.url}, p2p ${p2p.url}`)
  registerSelf({ db, identities, state, sender, self, profile: { id: `${cfg.org}/${cfg.node}`, endpoint: p2pUrl, cert }, log }).catch((err: unknown) =>
    log(`identity: registration failed: ${errorMessage(err)}`),
  )

  const a = api
  const p = p2p
  return {
    api: a.url,
    p2p: p.url,
    services,
    chain,
    storage,
    db,
    async stop() {
      await a.close()
      await p.close()
      await batchManager.stop()
      fetcher.stop()
      blobFetcher.stop()
      await chain.stop()
      await aggregator.whenIdle()
      await storage.stop()
      await db.close()
    },
  }
}
