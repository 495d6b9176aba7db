import type { Readable } from 'node:stream'
import type { NodeConfig } from './config.js'
import type { ChainStatus } from './chain/index.js'
import type { SharedStorageStatus } from './storage/shared-storage.js'
import type { MessageSender } from './messaging/sender.js'
import type { DatatypeDefiner } from './definitions/define-datatype.js'
import type { DataUploader } from './data/upload.js'
import type { SubscriptionManager } from './events/index.js'
import type { Hash } from './core/ids.js'
import type { DatabaseCapacity, StorageStatus } from './db/capacity.js'
import type { DatabaseStatus } from './db/engine.js'
import type { EventEnricher } from './events/index.js'
import type { Controls } from './admin/controls.js'
import type { NetworkMap } from './identity/network-map.js'
import type { Namespaces } from './namespace/namespaces.js'
import type { DataPublisher } from './data/publish.js'
import type { DataRemover } from './data/delete.js'
import type { DataDigest } from './data/digests.js'
import type {
  BatchRecord,
  BlockchainEventQuery,
  Data,
  DataRef,
  Datatype,
  CollectionQuery,
  EventQuery,
  Group,
  Identity,
  IdentityType,
  MessageQuery,
  Message,
  MessageTrace,
  NodeEvent,
  Operation,
  StoredBlockchainEvent,
  Transaction,
  Verifier,
} from './model/index.js'

export interface NodeStatus {
  namespace: { name: string; networkName: string }
  org: { name: string; did: string; key: string; registered: boolean; id?: string }
  node: { name: string; did: string; registered: boolean; id?: string; p2p: string }
  chain: ChainStatus
  ipfs: SharedStorageStatus
  /** Its engine and whether it is reachable (DatabaseStatus), beside what the ceiling of sql.js leaves. */
  database: DatabaseCapacity & DatabaseStatus
  /** Whether the member can store more: `full` at the database's ceiling, `disk-full` while its journal waits for space. */
  storage: StorageStatus
  /** False while storage is not `ok`, the database is not reachable, or the chain or shared storage is not connected. */
  healthy: boolean
  multiparty: { enabled: true; contract: { active: { index: 0; location: { address: string }; firstEvent: number } } }
  version: string
  started: string
}

/**
 * What route handlers may read: query functions over the node's collections. Nothing here writes; the repositories
 * behind them stay in the data layer, which alone turns a filter into SQL.
 */
export interface NodeQueries {
  /** `get`: the message an id alone means (docs/api.md, "Ids reused with other content"); `byRef`: by id and hash. */
  messages: { get(id: string): Message | undefined; byRef(id: string, hash: string): Message | undefined; list(q: MessageQuery): Message[] }
  data: {
    get(id: string): Data | undefined
    /** By id and hash, as messages name their data; in the order given. */
    getMany(refs: readonly DataRef[]): Data[]
    list(namespace: string, q: CollectionQuery): Data[]
    /** What a list page (the same query) would hold: its items and the bytes of their values. */
    listValueBytes(namespace: string, q: CollectionQuery): { items: number; bytes: number }
    /** Bytes of the values of these data items. */
    valueBytes(refs: readonly DataRef[]): number
  }
  /** Each message's data with the digests of what it carried (data/digests.ts), one read for them all. */
  dataDigests(messages: readonly Message[]): Map<Message, DataDigest[]>
  datatypes: { byId(id: string): Datatype | undefined; byNameVersion(namespace: string, name: string, version: string): Datatype | undefined; list(namespace: string, q: CollectionQuery): Datatype[] }
  events: {
    list(q: EventQuery): NodeEvent[]
    /** The objects a page of events refers to, one query per kind for the whole page. */
    enrich: EventEnricher
  }
  batches: { get(id: string): BatchRecord | undefined; byIdHash(id: string, hash: string): BatchRecord | undefined; byTxId(txId: string): BatchRecord | undefined; list(namespace: string, q: CollectionQuery): BatchRecord[] }
  identities: {
    byId(id: string): Identity | undefined
    byDid(did: string): Identity | undefined
    verifiersOf(identityId: string): Verifier[]
    list(type: IdentityType | undefined, q: CollectionQuery): Identity[]
  }
  /** Transactions: those of the batches held here and those recorded on their own (data publishes), newest first. */
  transactions: { get(id: string): Transaction | undefined; list(namespace: string, q: CollectionQuery): Transaction[] }
  /** The steps this member handed to its plugins (chain, shared storage, exchange), newest first. */
  operations: { get(id: string): Operation | undefined; list(namespace: string, q: CollectionQuery): Operation[] }
  blockchainEvents: { list(q: BlockchainEventQuery): StoredBlockchainEvent[]; byIds(ids: readonly string[]): Map<string, StoredBlockchainEvent> }
  /** The private groups this member is in (it stores no other), newest first. */
  groups: { get(namespace: string, hash: string): Group | undefined; list(namespace: string, q: CollectionQuery): Group[] }
  /** A blob's content, once this node holds it whole and verified; undefined before. */
  heldBlob(hash: Hash): Promise<{ stream: Readable; size: number } | undefined>
}

/** What route handlers may call: the node's capabilities (sending, defining, uploading) and its read models. */
export interface NodeServices {
  config: NodeConfig
  version: string
  status(ns: string): Promise<NodeStatus>
  query: NodeQueries
  sender: MessageSender
  datatypeDefiner: DatatypeDefiner
  uploader: DataUploader
  /** Publishes a data item's value or blob to shared storage (FireFly's `data/{id}/value/publish`, `.../blob/publish`). */
  publisher: DataPublisher
  /** Deletes a data item no message carries. */
  dataRemover: DataRemover
  /** The orgs, nodes and verifiers confirmed through the chain. */
  networkMap: NetworkMap
  namespaces: Namespaces
  /** Durable subscriptions: create, replace, read and delete them, and read their offsets. */
  subscriptions: SubscriptionManager
  /** Test controls (holds and drops of deliveries, chain and IPFS read holds), served only when `config.admin`. */
  controls: Controls
  /** A message's timeline on this member and why it waits (node/trace/trace.ts); undefined for a message not held here. */
  tracer: { trace(namespace: string, id: string, hash?: string): MessageTrace | undefined }
}

/** The fields each collection can be filtered and sorted by, described once in the data layer: the routes parse and document their query strings by them. */
export {
  BATCH_FIELDS,
  BLOCKCHAIN_EVENT_FIELDS,
  DATA_FIELDS,
  DATATYPE_FIELDS,
  EVENT_FIELDS,
  GROUP_FIELDS,
  IDENTITY_FIELDS,
  MESSAGE_FIELDS,
  OPERATION_FIELDS,
  SUBSCRIPTION_FIELDS,
  TRANSACTION_FIELDS,
  VERIFIER_FIELDS,
  type QueryFields,
} from './db/query-fields.js'

/** The package version the API reports. */
export { VERSION } from './version.js'
