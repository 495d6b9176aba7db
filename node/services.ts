import type { NodeConfig } from './config.js'
import type { BlockchainEventsRepo } from './db/repos/blockchain-events.js'
import type { ChainStatus } from './chain/types.js'
import type { SharedStorageStatus } from './storage/shared-storage.js'

export interface NodeStatus {
  namespace: { name: string; networkName: string }
  org: { name: string; did: string; key: string; registered: boolean }
  node: { name: string; registered: boolean; p2p: string }
  chain: ChainStatus
  ipfs: SharedStorageStatus
  multiparty: { enabled: true; contract: { active: { index: 0; location: { address: string }; firstEvent: number } } }
  version: string
  started: string
}

/** What route handlers may call: the node's capabilities, never its seams or tables directly. */
export interface NodeServices {
  config: NodeConfig
  version: string
  status(ns: string): Promise<NodeStatus>
  blockchainEvents: BlockchainEventsRepo
}
