import type { Database } from '../database.js'
import { BatchesRepo } from './batches.js'
import { BlobRefsRepo } from './blob-refs.js'
import { BlobsRepo } from './blobs.js'
import { BlockchainEventsRepo } from './blockchain-events.js'
import { DataRepo } from './data.js'
import { DatatypesRepo } from './datatypes.js'
import { DeliveriesRepo } from './deliveries.js'
import { EventsRepo } from './events.js'
import { GroupsRepo } from './groups.js'
import { IdentitiesRepo } from './identities.js'
import { MessagesRepo } from './messages.js'
import { NextPinsRepo } from './nextpins.js'
import { NodeStateRepo } from './node-state.js'
import { OperationsRepo } from './operations.js'
import { NamespacesRepo } from './namespaces.js'
import { NoncesRepo } from './nonces.js'
import { PinsRepo } from './pins.js'
import { ReceivedBlobsRepo } from './received-blobs.js'
import { SubscriptionsRepo } from './subscriptions.js'
import { TransactionsRepo } from './transactions.js'
import { UnpinnedBatchesRepo } from './unpinned-batches.js'

/** Every repository of a node's database, one each: some keep state in memory (the settled messages), so share them. */
export interface Repositories {
  state: NodeStateRepo
  blockchainEvents: BlockchainEventsRepo
  messages: MessagesRepo
  data: DataRepo
  batches: BatchesRepo
  pins: PinsRepo
  events: EventsRepo
  identities: IdentitiesRepo
  blobs: BlobsRepo
  blobRefs: BlobRefsRepo
  /** Blobs peers sent that no data item refers to yet: the unreferenced-blob quota's count. */
  receivedBlobs: ReceivedBlobsRepo
  datatypes: DatatypesRepo
  groups: GroupsRepo
  /** The private dispatcher allocates pin nonces from it when it seals a batch. */
  nonces: NoncesRepo
  deliveries: DeliveriesRepo
  nextpins: NextPinsRepo
  subscriptions: SubscriptionsRepo
  transactions: TransactionsRepo
  operations: OperationsRepo
  namespaces: NamespacesRepo
  /** Private batches delivered here, as the expiry of those never pinned reads them. */
  unpinnedBatches: UnpinnedBatchesRepo
}

export function openRepositories(db: Database): Repositories {
  return {
    state: new NodeStateRepo(db),
    blockchainEvents: new BlockchainEventsRepo(db),
    messages: new MessagesRepo(db),
    data: new DataRepo(db),
    batches: new BatchesRepo(db),
    pins: new PinsRepo(db),
    events: new EventsRepo(db),
    identities: new IdentitiesRepo(db),
    blobs: new BlobsRepo(db),
    blobRefs: new BlobRefsRepo(db),
    receivedBlobs: new ReceivedBlobsRepo(db),
    datatypes: new DatatypesRepo(db),
    groups: new GroupsRepo(db),
    nonces: new NoncesRepo(db),
    deliveries: new DeliveriesRepo(db),
    nextpins: new NextPinsRepo(db),
    subscriptions: new SubscriptionsRepo(db),
    transactions: new TransactionsRepo(db),
    operations: new OperationsRepo(db),
    namespaces: new NamespacesRepo(db),
    unpinnedBatches: new UnpinnedBatchesRepo(db),
  }
}
