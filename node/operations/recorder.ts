import { newId, type BatchId, type Hash, type OperationId, type TxId } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'
import type { Tx } from '../db/database.js'
import type { IdentitiesRepo } from '../db/repos/identities.js'
import { operationKey, type OperationsRepo } from '../db/repos/operations.js'
import { OPERATION_PLUGIN, type BatchPayload, type BatchRecord, type OperationFields, type OperationType } from '../model/index.js'

/**
 * Records the steps this member hands to its plugins as FireFly's operations, each in the transaction that records the
 * step itself, so an operation and what it describes never disagree:
 *
 * - a pinned batch's `blockchain_pin_batch` and a broadcast's `sharedstorage_upload_batch`, added when the batch is
 *   sealed and settled when its pin is recorded (the upload's `updated` is when it finished);
 * - `sharedstorage_upload_blob` when a broadcast publishes a blob it carries;
 * - `dataexchange_send_batch` per peer node when a private batch's deliveries are queued, settled as each is
 *   acknowledged or refused for good (a retry keeps it Pending with the last failure as its error), and
 *   `dataexchange_send_blob` when a peer acknowledges a blob.
 *
 * Inputs and outputs carry FireFly's field names. A node is named by its identity's UUID, as FireFly names it.
 */
export class OperationRecorder {
  constructor(private readonly deps: { operations: OperationsRepo; identities: Pick<IdentitiesRepo, 'byDid'> }) {}

  batchSealed(tx: Tx, b: BatchRecord, pinned: boolean): void {
    if (pinned) this.add(tx, 'blockchain_pin_batch', [b.id], b.namespace, b.txId, { batch: b.id }, b.created)
    if (b.type === 'broadcast') this.add(tx, 'sharedstorage_upload_batch', [b.id], b.namespace, b.txId, { id: b.id }, b.created)
  }

  /** The pin was mined: both steps succeeded, the upload when it finished (if known), the pin now. */
  batchPinned(tx: Tx, b: Pick<BatchRecord, 'id' | 'type'>, pin: { chainTx: string; payloadRef: string; contexts: readonly Hash[]; uploaded?: Timestamp }, at: Timestamp): void {
    const { operations } = this.deps
    const input = { batch: b.id, contexts: [...pin.contexts], payloadRef: pin.payloadRef }
    operations.settle(tx, operationKey('blockchain_pin_batch', b.id), { status: 'Succeeded', input, output: { transactionHash: pin.chainTx } }, at)
    if (b.type === 'broadcast') operations.settle(tx, operationKey('sharedstorage_upload_batch', b.id), { status: 'Succeeded', output: { payloadRef: pin.payloadRef } }, pin.uploaded ?? at)
  }

  blobPublished(tx: Tx, owner: { namespace: string; txId: TxId }, dataId: string, ref: string, at: Timestamp): void {
    this.add(tx, 'sharedstorage_upload_blob', [owner.txId, dataId], owner.namespace, owner.txId, { dataId }, at, { status: 'Succeeded', output: { payloadRef: ref } })
  }

  deliveryQueued(tx: Tx, payload: Pick<BatchPayload, 'id' | 'namespace' | 'group' | 'tx'>, peers: readonly string[], at: Timestamp): void {
    for (const peer of peers) {
      const input = { node: this.nodeId(peer), ...(payload.group ? { group: payload.group } : {}), batch: payload.id }
      this.add(tx, 'dataexchange_send_batch', [payload.id, peer], payload.namespace, payload.tx.id, input, at)
    }
  }

  deliverySettled(tx: Tx, batchId: BatchId, peer: string, outcome: { ok: true } | { ok: false; reason: string; final: boolean }, at: Timestamp): void {
    const key = operationKey('dataexchange_send_batch', batchId, peer)
    if (outcome.ok) this.deps.operations.settle(tx, key, { status: 'Succeeded' }, at)
    else this.deps.operations.settle(tx, key, { status: outcome.final ? 'Failed' : 'Pending', error: outcome.reason }, at)
  }

  blobSent(tx: Tx, payload: Pick<BatchPayload, 'id' | 'namespace' | 'tx'>, peer: string, hash: Hash, dataId: string, at: Timestamp): void {
    this.add(tx, 'dataexchange_send_blob', [payload.id, peer, hash], payload.namespace, payload.tx.id, { node: this.nodeId(peer), hash, data_id: dataId }, at, { status: 'Succeeded' })
  }

  private add(tx: Tx, type: OperationType, subjects: readonly string[], namespace: string, txId: TxId, input: OperationFields, at: Timestamp, done?: { status: 'Succeeded'; output?: OperationFields }): void {
    this.deps.operations.add(tx, operationKey(type, ...subjects), {
      id: newId<OperationId>(),
      namespace,
      tx: txId,
      type,
      status: done?.status ?? 'Pending',
      plugin: OPERATION_PLUGIN[type],
      input,
      ...(done?.output ? { output: done.output } : {}),
      created: at,
      updated: at,
    })
  }

  /** The node identity's UUID behind a peer's DID; the DID itself while its registration is not seen here. */
  private nodeId(did: string): string {
    return this.deps.identities.byDid(did)?.id ?? did
  }
}
