import { isParleyError, ParleyError } from '../core/errors.js'
import { dataHash } from '../core/hashes.js'
import { newId, type DataId } from '../core/ids.js'
import type { JsonNode } from '../core/json.js'
import { now } from '../core/time.js'
import type { Database } from '../db/database.js'
import type { BlobsRepo } from '../db/repos/blobs.js'
import type { DataRepo } from '../db/repos/data.js'
import { optString, parseBool } from '../core/input.js'
import { parseDatatypeRef, parseValidator } from './datatype.js'
import type { DataValidator } from './validator.js'
import { overLimit } from '../core/limits.js'
import type { BlobStore } from './blob-store.js'
import type { StorageGate } from '../db/capacity.js'
import { autometaValue, blobName, metadataValue } from './blob-metadata.js'
import { type Data, type DatatypeRef } from '../model/index.js'


const bad = (msg: string): never => {
  throw new ParleyError('INVALID_FIELD', msg)
}

/**
 * What a blob upload reads (the API's multipart reader provides it): the fields sent before the file, the file
 * as it streams in, whether the rest of the form was acceptable, and a way to stop reading.
 */
export interface BlobUploadForm {
  fields: ReadonlyMap<string, string>
  file: { filename: string; mimeType: string; chunks: AsyncIterable<Uint8Array> }
  finished(): Promise<void>
  abandon(): void
}

export interface DataUploaderDeps {
  db: Database
  data: DataRepo
  blobs: BlobsRepo
  blobStore: BlobStore
  validator: DataValidator
  /** Refuses new uploads (STORAGE_FULL) at the database's ceiling or while its disk is full; none in unit tests. */
  gate?: StorageGate
  /** Refuse blobs larger than this (413); unlimited when unset. */
  maxBlobBytes?: number
  /** Refuse JSON values larger than this, compacted (413); unlimited when unset. */
  maxValueBytes?: number
}

/**
 * Uploaded data, held on this node until a message carries it: a JSON value, or a blob streamed into the blob
 * store with a value describing it. Answers only once the data item is durable, and records nothing for an upload
 * that fails anywhere (the blob file may stay: it is named by its content and may serve other data).
 */
export class DataUploader {
  constructor(private readonly deps: DataUploaderDeps) {}

  /** `{validator?, datatype?, value}`; an `id` is ignored, as FireFly does: the node allocates ids. */
  async uploadValue(namespace: string, body: JsonNode): Promise<Data> {
    this.deps.gate?.admit()
    if (body.kind !== 'object') bad('the request body must be a JSON object {value, datatype?, validator?}')
    const value = body.get('value')
    if (value === undefined || value.kind === 'null') bad('value is required (upload a blob as multipart/form-data)')
    const valueBytes = Buffer.byteLength(value!.raw)
    if (this.deps.maxValueBytes !== undefined && valueBytes > this.deps.maxValueBytes) {
      throw overLimit('valueBytes', this.deps.maxValueBytes, `value is ${valueBytes} bytes as stored (compacted JSON, <, > and & escaped as Go writes them)`)
    }
    const d: Data = {
      id: newId<DataId>(),
      validator: parseValidator(optString(body.get('validator'), 'validator'), 'validator'),
      namespace,
      hash: dataHash({ valueRaw: value!.raw }),
      created: now(),
      ...optionalDatatype(parseDatatypeRef(body.get('datatype'), 'datatype')),
      value: value!.raw,
    }
    await this.deps.validator.validateAll(namespace, [d])
    await this.deps.db.transaction((tx) => this.deps.data.insert(tx, d, true))
    return d
  }

  /**
   * A multipart upload: fields `validator`, `datatype.name`, `datatype.version`, `metadata`, `autometa`, then the
   * file. The file goes straight to the blob store; the value, its hash and its validation come once the blob's
   * hash and size are known and the form has ended well.
   */
  async uploadBlob(namespace: string, form: BlobUploadForm): Promise<Data> {
    try {
      this.deps.gate?.admit()
      const f = form.fields
      const validator = parseValidator(f.get('validator'), 'validator')
      const dtName = nonEmpty(f.get('datatype.name'))
      const datatype: DatatypeRef | undefined = dtName ? { name: dtName, version: f.get('datatype.version') ?? '' } : undefined
      const autometa = parseBool(f.get('autometa') ?? '', 'autometa', { empty: false })
      const metadata = metadataValue(f.get('metadata'))
      // An unknown datatype is known before the first byte of the blob: refuse before reading gigabytes.
      if (datatype) this.deps.validator.requireDatatype(namespace, validator, datatype)

      let stored
      try {
        stored = await this.deps.blobStore.write(form.file.chunks, this.deps.maxBlobBytes === undefined ? {} : { maxBytes: this.deps.maxBlobBytes })
      } catch (err) {
        if (isParleyError(err, 'PAYLOAD_TOO_LARGE')) throw overLimit('uploadBytes', this.deps.maxBlobBytes ?? 0, `the file is over ${this.deps.maxBlobBytes} bytes`, { cause: err })
        throw err
      }
      await form.finished()

      const valueRaw = autometa ? autometaValue(metadata, { filename: form.file.filename, mimetype: form.file.mimeType, size: stored.size }) : metadata
      const created = now()
      const d: Data = {
        id: newId<DataId>(),
        validator,
        namespace,
        hash: dataHash({ valueRaw, blobHash: stored.hash }),
        created,
        ...(datatype ? { datatype } : {}),
        value: valueRaw,
        blob: { hash: stored.hash, size: stored.size, name: blobName(valueRaw) },
      }
      await this.deps.validator.validateAll(namespace, [d])
      await this.deps.db.transaction((tx) => {
        this.deps.blobs.insert(tx, { hash: stored.hash, size: stored.size, created })
        this.deps.data.insert(tx, d, true)
      })
      return d
    } finally {
      form.abandon()
    }
  }
}


const optionalDatatype = (datatype: DatatypeRef | undefined): { datatype?: DatatypeRef } => (datatype ? { datatype } : {})

const nonEmpty = (s: string | undefined): string | undefined => (s === undefined || s === '' ? undefined : s)
