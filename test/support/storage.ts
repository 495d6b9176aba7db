import { createHash } from 'node:crypto'
import { parseBatch } from '../../node/batch/payload.js'
import type { BatchPayload } from '../../node/model/index.js'
import type { SharedStorage, SharedStorageStatus } from '../../node/storage/shared-storage.js'
import { chunksOf, collect } from './streams.js'

/** One upload that the storage kept. */
export interface Upload {
  ref: string
  name: string | undefined
  bytes: Buffer
}

/**
 * Shared storage in memory. It keeps what it is given under a content-derived reference as IPFS does (the same bytes
 * get the same reference, `ref-<sha256>`; `validRef` accepts that form only), and fails when told to, as an
 * unreachable IPFS would: the next `failNext(n)` uploads, the next `failDownloads` downloads.
 */
export class MemoryStorage implements SharedStorage {
  /** The uploads it kept, in order. */
  readonly uploaded: Upload[] = []
  readonly content = new Map<string, Buffer>()
  /** Upload calls, failed ones included. */
  attempts = 0
  failDownloads = 0
  private failingUploads = 0

  failNext(n: number): void {
    this.failingUploads = n
  }

  start(): void {}

  async upload(content: Uint8Array | AsyncIterable<Uint8Array>, name?: string): Promise<string> {
    this.attempts++
    if (this.failingUploads > 0) {
      this.failingUploads--
      throw new Error('storage unreachable')
    }
    const bytes = content instanceof Uint8Array ? Buffer.from(content) : await collect(content)
    const ref = `ref-${createHash('sha256').update(bytes).digest('hex')}`
    this.content.set(ref, bytes)
    this.uploaded.push({ ref, name, bytes })
    return ref
  }

  async *download(ref: string): AsyncIterable<Uint8Array> {
    if (this.failDownloads > 0) {
      this.failDownloads--
      throw new Error('storage unreachable')
    }
    const bytes = this.content.get(ref)
    if (!bytes) throw new Error(`no ${ref}`)
    yield* chunksOf(bytes)
  }

  validRef(ref: string): boolean {
    return ref.startsWith('ref-')
  }

  async probe(): Promise<SharedStorageStatus> {
    return { connected: true, api: 'memory', gateway: 'memory' }
  }

  async stop(): Promise<void> {}

  /** The batch payload stored under `ref`, as a member fetching it would read it. */
  payload(ref: string): BatchPayload {
    const bytes = this.content.get(ref)
    if (!bytes) throw new Error(`nothing uploaded as ${ref}`)
    return parseBatch(bytes.toString('utf8'))
  }
}
