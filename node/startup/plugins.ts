import { readFileSync } from 'node:fs'
import type { NodeConfig } from '../config.js'
import { createChain, type BatchPinEvent, type Chain } from '../chain/index.js'
import { createIpfsStorage } from '../storage/ipfs.js'
import type { SharedStorage } from '../storage/shared-storage.js'
import { createExchange, type Exchange, type Peer } from '../exchange/index.js'
import { parseBatch, serializeBatch } from '../batch/payload.js'
import { DeliveryGate } from '../messaging/delivery-gate.js'
import { Gate } from '../core/gate.js'
import { localIdentity, type LocalIdentity } from '../model/index.js'
import { LazyPeers, registeredPeers } from '../identity/peers.js'
import { addressOfKey } from '../chain/key-address.js'
import type { NodeStore } from './store.js'

/** Who this member is: its org and node identity, its signing key's address, its p2p endpoint and certificate. */
export interface Self {
  identity: LocalIdentity
  /** The signing key's address, lower-case. */
  key: string
  cert: string
  p2pUrl: string
}

/** The test controls' switches (served through the admin routes when cfg.admin): in memory, open at every start. */
export interface ControlGates {
  deliveries: DeliveryGate
  chainReads: Gate
  ipfsReads: Gate
}

/** The other members' nodes as the exchange knows them. */
export interface PeerDirectory {
  /**
   * Trusts every registered node: called at start and whenever a node identity is confirmed. The list is read and
   * handed to the exchange when next needed (a connection, a request, a `peerOf`), not at each call.
   */
  trust(): void
  peerOf(did: string): Peer | undefined
}

/** The seams to the outside world, as FireFly's plugins: the chain, shared storage and the p2p exchange. */
export interface Plugins {
  self: Self
  gates: ControlGates
  storage: SharedStorage
  exchange: Exchange
  peers: PeerDirectory
  chain: Chain
}

/**
 * What the plugins call back into. The managers provide these once they exist (start-up phase 3), before any
 * plugin starts, so a plugin is built without them and calls them only once running, as FireFly's plugins are
 * initialised first and given their event handlers after.
 */
export interface PluginCallbacks {
  /** BatchPin events the chain read, through `throughBlock`. */
  chainEvents(events: BatchPinEvent[], throughBlock: number): Promise<void>
}

/**
 * Start-up phase 2: the member's identity and its plugins, built and not started. Reads the signing key and the
 * TLS material; nothing listens or connects yet.
 */
export function initPlugins(cfg: NodeConfig, store: NodeStore, callbacks: PluginCallbacks, log: (line: string) => void): Plugins {
  const { state, identities } = store.repos
  const key = addressOfKey(cfg.signingKey)
  const self: Self = { identity: localIdentity(cfg.org, cfg.node, key), key, cert: readFileSync(cfg.p2p.cert, 'utf8'), p2pUrl: cfg.p2p.endpoint }
  const gates: ControlGates = { deliveries: new DeliveryGate(), chainReads: new Gate(), ipfsReads: new Gate() }
  const storage = createIpfsStorage({ api: cfg.ipfs.api, gateway: cfg.ipfs.gateway, log })

  // Every registered node as a peer, by the endpoint and certificate its claim published, and its owning org.
  const peerList = new LazyPeers(() => registeredPeers(identities), (list) => exchange.trust(list), log)
  // The p2p endpoint: private batches and blobs to and from the other members' nodes.
  const exchange = createExchange({ host: cfg.p2p.host, port: cfg.p2p.port, cert: self.cert, key: readFileSync(cfg.p2p.key, 'utf8'), log, codec: { parse: parseBatch, serialize: serializeBatch }, quotas: cfg.quotas, retry: cfg.p2p.retry, beforeUse: () => void peerList.current() })
  const peers: PeerDirectory = {
    trust: () => peerList.markStale(),
    peerOf: (did) => peerList.current().get(did),
  }

  const chain = createChain({
    rpc: cfg.chain.rpc,
    contract: cfg.chain.contract,
    privateKey: cfg.signingKey,
    fromBlock: state.chainCursor() ?? cfg.chain.firstBlock,
    log,
    readGate: gates.chainReads,
    onEvents: (events, throughBlock) => callbacks.chainEvents(events, throughBlock),
  })
  return { self, gates, storage, exchange, peers, chain }
}
