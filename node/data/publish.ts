import { errorMessage, ParleyError } from '../core/errors.js'
import { newId, type DataId, type OperationId, type TxId } from '../core/ids.js'
import { now } from '../core/time.js'
import type { Database, Tx } from '../db/database.js'
import type { BlobRefsRepo } from '../db/repos/blob-refs.js'
import type { BlobsRepo } from '../db/repos/blobs.js'
import type { DataRepo } from '../db/repos/data.js'
import { operationKey, type OperationsRepo } from '../db/repos/operations.js'
import type { TransactionsRepo } from '../db/repos/transactions.js'
import type { SharedStorage } from '../storage/shared-storage.js'
import { OPERATION_PLUGIN, type Data, type OperationType } from '../model/index.js'
import type { BlobStore } from './blob-store.js'

export interface DataPublisherDeps {
  db: Database
  data: DataRepo
  refs: BlobRefsRepo
  blobs: BlobsRepo
  transactions: TransactionsRepo
  operations: OperationsRepo
  blobStore: BlobStore
  storage: SharedStorage
}

/**
 * FireFly's `data/{id}/value/publish` and `data/{id}/blob/publish`: puts a data item's value, or its blob, on shared
 * storage and records where (`public`, `blob.public`). Each publish is a `data_publish` transaction with one upload
 * operation, recorded before the upload starts and settled after it, so a failed upload is visible as a Failed
 * operation. An idempotency key names the transaction: a second publish with the same key is a conflict, as in FireFly.
 */
export class DataPublisher {
  constructor(private readonly deps: DataPublisherDeps) {}

  async publishValue(namespace: string, id: DataId, idempotencyKey?: string): Promise<Data> {
    const d = this.dataIn(namespace, id)
    if (d.value === null) throw new ParleyError('INVALID_FIELD', `data ${id} has no value to publish`)
    const value = d.value
    const upload = () => this.deps.storage.upload(Buffer.from(value, 'utf8'))
    await this.run(namespace, d, 'sharedstorage_upload_value', idempotencyKey, upload, (tx, ref) => this.deps.data.setPublic(tx, d, ref))
    return this.dataIn(namespace, id)
  }

  async publishBlob(namespace: string, id: DataId, idempotencyKey?: string): Promise<Data> {
    const d = this.dataIn(namespace, id)
    const blob = d.blob
    if (!blob) throw new ParleyError('INVALID_FIELD', `data ${id} has no blob to publish`)
    // Held once recorded: a file with no record is an upload still being written, or a leftover.
    const held = this.deps.blobs.has(blob.hash) ? await this.deps.blobStore.read(blob.hash) : undefined
    if (!held) throw new ParleyError('NOT_FOUND', `this node does not hold the blob ${blob.hash} of data ${id} (yet)`)
    const upload = async (): Promise<string> => {
      try {
        // Named by its hash, never by the user's name: Kubo reads a `/` in a name as a directory to wrap it in.
        return await this.deps.storage.upload(held.stream, blob.hash)
      } finally {
        held.stream.destroy()
      }
    }
    try {
      await this.run(namespace, d, 'sharedstorage_upload_blob', idempotencyKey, upload, (tx, ref) => {
        this.deps.data.setBlobPublic(tx, d, ref)
        // Put there by this node: the reference is known good, as for a blob a broadcast publishes.
        this.deps.refs.settle(tx, { hash: blob.hash, size: blob.size, public: ref }, { ok: true }, now())
      })
    } catch (err) {
      held.stream.destroy()
      throw err
    }
    return this.dataIn(namespace, id)
  }

  private dataIn(namespace: string, id: DataId): Data {
    const d = this.deps.data.own(id)
    if (!d || d.namespace !== namespace) throw new ParleyError('NOT_FOUND', `data ${id} not found in namespace ${namespace}`)
    return d
  }

  /** Records the transaction and its operation, uploads, then records the reference and the outcome. */
  private async run(
    namespace: string,
    d: Data,
    type: OperationType,
    idempotencyKey: string | undefined,
    upload: () => Promise<string>,
    record: (tx: Tx, ref: string) => void,
  ): Promise<string> {
    const { db, transactions, operations } = this.deps
    const txId = newId<TxId>()
    const key = operationKey(type, txId, d.id)
    const created = now()
    await db.transaction((tx) => {
      if (idempotencyKey !== undefined) {
        const used = transactions.byIdempotencyKey(namespace, idempotencyKey, tx)
        if (used) throw new ParleyError('CONFLICT', `idempotency key ${JSON.stringify(idempotencyKey)} was already used by transaction ${used.id}`)
      }
      transactions.insert(tx, { id: txId, namespace, type: 'data_publish', created, ...(idempotencyKey !== undefined ? { idempotencyKey } : {}), blockchainIds: [] })
      operations.add(tx, key, { id: newId<OperationId>(), namespace, tx: txId, type, status: 'Pending', plugin: OPERATION_PLUGIN[type], input: { dataId: d.id }, created, updated: created })
    })
    let ref: string
    try {
      ref = await upload()
    } catch (err) {
      await db.transaction((tx) => operations.settle(tx, key, { status: 'Failed', error: errorMessage(err) }, now()))
      throw new ParleyError('UNAVAILABLE', `shared storage did not take data ${d.id}: ${errorMessage(err)}`, { cause: err })
    }
    await db.transaction((tx) => {
      record(tx, ref)
      operations.settle(tx, key, { status: 'Succeeded', output: { payloadRef: ref } }, now())
    })
    return ref
  }
}
