import type { NodeConfig } from './config.js'
import type { BlockchainEventsRepo } from './db/repos/blockchain-events.js'
import type { MessagesRepo } from './db/repos/messages.js'
import type { DataRepo } from './db/repos/data.js'
import type { IdentitiesRepo } from './db/repos/identities.js'
import type { EventsRepo } from './db/repos/events.js'
import type { BatchesRepo } from './db/repos/batches.js'
import type { ChainStatus } from './chain/types.js'
import type { SharedStorageStatus } from './storage/shared-storage.js'
import type { MessageSender } from './messaging/sender.js'
import type { BlobsRepo } from './db/repos/blobs.js'
import type { BlobStore } from './data/blob-store.js'
import type { DatatypesRepo } from './db/repos/datatypes.js'
import type { DatatypeDefiner } from './definitions/define-datatype.js'
import type { DataUploader } from './data/upload.js'

export interface NodeStatus {
  namespace: { name: string; networkName: string }
  org: { name: string; did: string; key: string; registered: boolean; id?: string }
  node: { name: string; did: string; registered: boolean; id?: string; p2p: string }
  chain: ChainStatus
  ipfs: SharedStorageStatus
  multiparty: { enabled: true; contract: { active: { index: 0; location: { address: string }; firstEvent: number } } }
  version: string
  started: string
}

/**
 * What route handlers may call: the node's capabilities (sending) and its read models. Writes go through
 * capabilities only; the repositories are exposed for reading.
 */
export interface NodeServices {
  config: NodeConfig
  version: string
  status(ns: string): Promise<NodeStatus>
  sender: MessageSender
  blockchainEvents: BlockchainEventsRepo
  messages: MessagesRepo
  data: DataRepo
  identities: IdentitiesRepo
  events: EventsRepo
  batches: BatchesRepo
  blobs: BlobsRepo
  blobStore: BlobStore
  datatypes: DatatypesRepo
  datatypeDefiner: DatatypeDefiner
  uploader: DataUploader
}
