/** When a batch is sealed: whichever comes first of its message count, its payload size, or its age. */
export interface BatchConfig {
  /** Messages per batch (FireFly's default 200). */
  size: number
  /** Milliseconds from the first message of a batch until it is sealed anyway. */
  timeoutMs: number
  /** Bytes of payload (estimated) per batch; FireFly's default is 800 KB. */
  payloadLimit: number
}

export const DEFAULT_BATCH_CONFIG: BatchConfig = { size: 200, timeoutMs: 500, payloadLimit: 800 * 1024 }
