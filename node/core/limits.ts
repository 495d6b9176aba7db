import { ParleyError } from './errors.js'
import { DEFAULT_QUEUED_REQUESTS } from './pipelining.js'

/**
 * What one member accepts from its own API clients, configurable per member (config `limits`). These bound the
 * cost of one request on this member only; the limits every member applies to what peers send (batch payload,
 * nesting depth, data items and topics per message) are fixed for the network in node/model, and a member's own
 * limit may be lower than the network's but never higher, so what it accepts every member accepts.
 */
export interface RequestLimits {
  /** A JSON request body, in bytes. */
  jsonBodyBytes: number
  /** One data value as sent (its JSON text, compacted), in bytes. */
  valueBytes: number
  /** One uploaded blob (a multipart file), in bytes; streamed to disk, so bounded by the disk rather than memory. */
  uploadBytes: number
  /** The request line and headers together, in bytes (Node's `maxHeaderSize`). */
  headerBytes: number
  /** The request target (path and query string), in bytes. */
  urlBytes: number
  /** Data items in one message. */
  dataPerMessage: number
  /** Topics in one message. */
  topicsPerMessage: number
  /** Characters of an idempotency key. */
  idempotencyKeyChars: number
  /** Bytes of request bodies being read at once, over every connection: past it, new bodies get 429. */
  inFlightBodyBytes: number
  /** A request body that sends nothing for this long is abandoned (its connection is closed), in milliseconds. */
  bodyIdleMs: number

  // What one client may hold of the member, so that no one client starves the others.
  /**
   * Requests that may wait on one connection behind the one being served; past it the connection is not read, and
   * past it by 32 more (what one read can bring) the connection is closed.
   */
  queuedRequestsPerConnection: number
  /** Open API connections in all; past it a new connection is answered 503 and closed. */
  connections: number
  /** Open API connections from one client address (every loopback client is one); past it 429 and closed. */
  connectionsPerAddress: number
  /** Bytes of request bodies being read at once from one client address (its share of inFlightBodyBytes): past it, 429. */
  addressBodyBytes: number
  /** A JSON request body must arrive whole within this long of its reading starting (408 otherwise), in milliseconds. */
  bodyDeadlineMs: number
  /**
   * When a body is refused for want of budget, bodies still being read that sent less than 64 KiB in this long give up
   * their share to it (408, connection closed), in milliseconds: clients that stall or trickle keep a budget only while
   * nobody needs it.
   */
  bodyStalledMs: number
  /**
   * After a refusal sent before its body was read through, this much of the rest is read and dropped so that a client
   * that sends its whole body before reading gets the answer rather than a reset; past it the connection is closed.
   */
  discardBodyBytes: number
}

const MiB = 1024 * 1024

/**
 * Body and value sizes bound how long one message holds a member's event loop, at send and on every receiver (its
 * text is parsed, compacted, hashed and stored in one turn): about 80-130 ms for 8 MiB on the reference 2-core
 * machine, twice that for 16 MiB. Raise them where larger messages matter more than that pause.
 */
export const DEFAULT_REQUEST_LIMITS: Readonly<RequestLimits> = {
  jsonBodyBytes: 8 * MiB,
  valueBytes: 8 * MiB,
  uploadBytes: 8 * 1024 * MiB,
  headerBytes: 16 * 1024,
  urlBytes: 8 * 1024,
  dataPerMessage: 100,
  topicsPerMessage: 10,
  idempotencyKeyChars: 256,
  inFlightBodyBytes: 256 * MiB,
  bodyIdleMs: 30_000,

  queuedRequestsPerConnection: DEFAULT_QUEUED_REQUESTS,
  connections: 1024,
  connectionsPerAddress: 256,
  addressBodyBytes: 128 * MiB,
  bodyDeadlineMs: 60_000,
  bodyStalledMs: 2_000,
  discardBodyBytes: 64 * MiB,
}

/**
 * The refusal of a request over one of this member's limits: it names the limit, as configured, and its value, so
 * the caller knows what to change and the operator what to raise.
 */
export function overLimit(limit: keyof RequestLimits, value: number, what: string, options?: { cause?: unknown }): ParleyError {
  const unit = limit.endsWith('Bytes') ? ' bytes' : limit.endsWith('Chars') ? ' characters' : limit.endsWith('Ms') ? ' ms' : ''
  const code = limit.endsWith('Bytes') ? 'PAYLOAD_TOO_LARGE' : 'INVALID_FIELD'
  return new ParleyError(code, `${what}; this member accepts at most ${value}${unit} (limits.${limit})`, options)
}
