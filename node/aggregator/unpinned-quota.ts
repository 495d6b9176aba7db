import { ParleyError } from '../core/errors.js'
import { addCount } from '../core/counts.js'
import { readableDuration } from '../core/duration.js'
import type { Data } from '../model/index.js'

/**
 * What a private batch counts against its org's quota at the least, whatever its size: it costs a batch row and a row
 * per message. It also bounds how many batches the quota keeps in memory per org (limit / this).
 */
export const MIN_BATCH_CHARGE_BYTES = 4 * 1024

/** A private batch a peer delivered, as the quota knows it: by (id, hash), and the key whose pins decide it. */
export interface ChargedBatch {
  id: string
  hash: string
  key: string
}

/** A stored batch no pin names yet, as counted at start (UnpinnedBatchesRepo.charges). */
export interface BatchCharge extends ChargedBatch {
  org: string
  bytes: number
}

export interface UnpinnedBatchQuotaDeps {
  /** `quotas.unpinnedBatchBytesPerOrg`. */
  limitBytes: number
  /** `quotas.unpinnedBatchMs`, named in the refusal. */
  keepMs: number
}

/**
 * Gives a batch's share back (its transaction failed, or it was pinned already). Idempotent, and a no-op once the batch
 * stopped counting otherwise: a batch stored counts until its pin arrives or it is deleted.
 */
export type BatchRelease = () => void

/**
 * What a private batch counts: what storing it keeps, its manifest and its data items' values (UTF-8 bytes, as
 * `octet_length` counts them at start), at least MIN_BATCH_CHARGE_BYTES. Work per data item, none per message.
 */
export function batchCharge(manifest: string, data: readonly Pick<Data, 'value'>[]): number {
  let bytes = Buffer.byteLength(manifest)
  for (const d of data) if (d.value !== null) bytes += Buffer.byteLength(d.value)
  return Math.max(bytes, MIN_BATCH_CHARGE_BYTES)
}

const keyOf = (id: string, hash: string): string => `${id}/${hash}`

/**
 * The quota on private batches peers deliver and never pin (`quotas.unpinnedBatchBytesPerOrg`): per author org, the
 * bytes (batchCharge) of its pinned-kind private batches stored here that no private pin of their key names yet, those
 * being stored included, so that parallel deliveries cannot pass it together. A delivery past it is refused
 * STORAGE_FULL (507), which the sender retries later, as any refused delivery: an honest sender's batches are taken
 * once its pins free its share. The count lives in memory, read from the database once; each batch is added on
 * delivery and taken out when its pin is read from the chain (`pinned`) or when the expiry passes it, deleting it or
 * keeping it as pinned (`forget`), each in constant time. Unpinned (`txtype: none`) batches do not count: their messages are decided on arrival.
 */
export class UnpinnedBatchQuota {
  /** By `id/hash`: each counted batch, stored or being stored, with its org and charge. */
  private readonly batches = new Map<string, BatchCharge>()
  private readonly usage = new Map<string, number>()

  /** `stored`: every stored batch that counts, as read at start (one query); each counts at least MIN_BATCH_CHARGE_BYTES. */
  constructor(
    private readonly deps: UnpinnedBatchQuotaDeps,
    stored: readonly BatchCharge[],
  ) {
    for (const c of stored) this.add(keyOf(c.id, c.hash), { ...c, bytes: Math.max(c.bytes, MIN_BATCH_CHARGE_BYTES) })
  }

  /**
   * Holds `bytes` of `org`'s quota for batch `b`, or throws STORAGE_FULL naming the quota. A batch counted already
   * (delivered again while its first copy is counted) takes nothing more.
   */
  reserve(org: string, b: ChargedBatch, bytes: number): BatchRelease {
    const key = keyOf(b.id, b.hash)
    if (this.batches.has(key)) return () => {}
    const used = this.usedBy(org)
    if (used + bytes > this.deps.limitBytes) this.refuse(org, used, `batch ${b.id} of ${bytes} bytes`)
    const charge: BatchCharge = { ...b, org, bytes }
    this.add(key, charge)
    return () => {
      if (this.batches.get(key) === charge) this.remove(key)
    }
  }

  /**
   * Throws STORAGE_FULL when `org` has no room for even the smallest batch: asked before a batch's body is read, so that
   * a sender retrying while its pins are late costs no read, parse or hash of what would be refused anyway.
   */
  admit(org: string): void {
    const used = this.usedBy(org)
    if (used + MIN_BATCH_CHARGE_BYTES > this.deps.limitBytes) this.refuse(org, used, 'another batch')
  }

  private refuse(org: string, used: number, what: string): never {
    throw new ParleyError(
      'STORAGE_FULL',
      `org ${org} already has ${used} bytes here in private batches that no pin names yet; ${what} would pass ${this.deps.limitBytes} (quotas.unpinnedBatchBytesPerOrg). A batch counts until its pin is read from the chain, and is deleted after ${readableDuration(this.deps.keepMs)} without one (quotas.unpinnedBatchMs)`,
    )
  }

  /** A private pin was read from the chain: the batch it names stops counting if `signer` is its key. */
  pinned(batchId: string, batchHash: string, signer: string): void {
    const key = keyOf(batchId, batchHash)
    if (this.batches.get(key)?.key === signer) this.remove(key)
  }

  /** The expiry passed the batch (deleted it, or kept it as pinned or decided): it stops counting. */
  forget(batchId: string, batchHash: string): void {
    const key = keyOf(batchId, batchHash)
    if (this.batches.has(key)) this.remove(key)
  }

  /** Bytes `org`'s batches count, stored or being stored. */
  usedBy(org: string): number {
    return this.usage.get(org) ?? 0
  }

  private add(key: string, c: BatchCharge): void {
    this.batches.set(key, c)
    addCount(this.usage, c.org, c.bytes)
  }

  private remove(key: string): void {
    const c = this.batches.get(key)!
    this.batches.delete(key)
    addCount(this.usage, c.org, -c.bytes)
  }
}
