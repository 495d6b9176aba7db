/**
 * The shared-storage seam: where broadcast batches and published blobs live. The local network runs its own
 * IPFS; a production member points at a real Kubo daemon and gateway. Small on purpose, so tests can use a
 * real endpoint and nothing else in the node knows it is IPFS.
 */
export interface SharedStorageStatus {
  connected: boolean
  api: string
  gateway: string
  version?: string
  error?: string
}

export interface SharedStorage {
  /** Begins watching the endpoint: one log line when it is unreachable, one when it comes back. */
  start(): void
  /** Stores the content (streamed) and answers its content id. */
  upload(content: Uint8Array | AsyncIterable<Uint8Array>, name?: string): Promise<string>
  /** Streams the content of `ref` back; rejects when it cannot be found. `signal` abandons the transfer. */
  download(ref: string, signal?: AbortSignal): AsyncIterable<Uint8Array>
  /** Whether `ref` is a reference this storage could ever resolve (a syntactically valid content id). */
  validRef(ref: string): boolean
  /** Asks the endpoint now (bounded by a short timeout). */
  probe(): Promise<SharedStorageStatus>
  stop(): Promise<void>
}
