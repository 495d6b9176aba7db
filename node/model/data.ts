import type { CarriedDataFields } from '../core/hashes.js'
import type { DataId, Hash } from '../core/ids.js'
import type { Timestamp } from '../core/time.js'

/**
 * How deep a value checked against a datatype (or a datatype's schema) may nest. Schema validation recurses, and
 * where a JS stack runs out differs from one process to the next; a limit every member applies first gives every
 * member the same verdict.
 */
export const MAX_VALIDATED_DEPTH = 512

/**
 * The most data items one message may carry, on every member: a sender refuses more (its own limit may be lower),
 * and a receiver rejects a message with more, so a hostile sender cannot make members disagree or stall on one.
 */
export const MAX_DATA_PER_MESSAGE = 1000

/** How a data value is checked: `json` against its datatype (when it names one), `none` not at all. */
const VALIDATORS = ['json', 'none'] as const
export type Validator = (typeof VALIDATORS)[number]

export function isValidator(v: string): v is Validator {
  return (VALIDATORS as readonly string[]).includes(v)
}

export interface BlobRef {
  hash: Hash
  size: number
  name: string
  /** The shared-storage reference, once published. */
  public?: string
}

export interface DatatypeRef {
  name: string
  version: string
}

/** A data item. `value` is the compacted JSON text as received (hashes cover exactly these bytes), or null. */
export interface Data {
  id: DataId
  validator: string
  namespace: string
  hash: Hash
  created: Timestamp
  datatype?: DatatypeRef
  value: string | null
  /** Where the value was published on its own (`data/{id}/value/publish`); the API shows it, batches do not carry it. */
  public?: string
  blob?: BlobRef
  /**
   * A row received in a batch: the digest of the fields that batch carried with it (core/hashes.ts dataDigest), which
   * with id and hash names the row. Absent on this member's own data items (one per id).
   */
  digest?: Hash
}

/** The fields of `d` a data digest covers, as the data table stores them (absent ones null). */
export function carriedFields(d: Data): CarriedDataFields {
  return {
    validator: d.validator,
    namespace: d.namespace,
    created: d.created,
    datatypeName: d.datatype?.name ?? null,
    datatypeVersion: d.datatype?.version ?? null,
    blobHash: d.blob?.hash ?? null,
    blobSize: d.blob?.size ?? null,
    blobName: d.blob?.name ?? null,
    blobPublic: d.blob?.public ?? null,
  }
}

/** A blob as a broadcast announces it: its hash and size, and where it was published. */
export interface AnnouncedBlob {
  hash: Hash
  size: number
  public: string
}

/** What this node found at an announced blob reference. */
export type BlobRefVerdict = { ok: true } | { ok: false; reason: string }
