/** The exchange seam's public face: the node imports from here, nothing else in this folder. */
export { startP2pServer } from './p2p-server.js'
export type { P2pHandler, P2pPeer, P2pServer, P2pServerOptions } from './p2p-server.js'
export { createExchange } from './exchange.js'
export { DEFAULT_RETRY } from './retry.js'
export type { BatchPayload } from '../model/index.js'
export type { BatchCodec, BatchHandler, BlobHandler, BlobRef, Exchange, ExchangeOptions, Peer, RetryPolicy } from './types.js'
