/**
 * The one closed set of error codes the node's capabilities fail with (as ethers' `ErrorCode`): callers branch on
 * the code, never on message text. What a code means to an HTTP client is the API's business (api/errors.ts).
 */
export const ERROR_CODES = [
  /** The caller's request is malformed in a way no narrower code names. */
  'BAD_REQUEST',
  'INVALID_ID',
  'INVALID_JSON',
  'INVALID_FIELD',
  'INVALID_FILTER',
  'SCHEMA_VALIDATION_FAILED',
  'UNKNOWN_DATATYPE',
  'UNKNOWN_IDENTITY',
  'PAYLOAD_TOO_LARGE',
  /** A control that needs the member's admin token was asked without it (or with another). */
  'UNAUTHORIZED',
  /** A page of another origin asked for a change (anything but a read), or a WebSocket. */
  'FORBIDDEN',
  /** The request names a host (its `Host`) that is not one of this member's host names: DNS rebinding, or a misrouted request. */
  'MISDIRECTED_REQUEST',
  /** The request target (path and query) is longer than the member accepts. */
  'URI_TOO_LONG',
  /** An `Expect` header the member cannot meet (anything but 100-continue). */
  'EXPECTATION_FAILED',
  'UNSUPPORTED_MEDIA_TYPE',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  /** The request contradicts what is already recorded (a reused idempotency key, a datatype that exists). */
  'CONFLICT',
  /** A message this caller waited for was ordered and refused by the aggregator. */
  'MESSAGE_REJECTED',
  'CONFIRM_TIMEOUT',
  /**
   * What another member sent (a batch, a blob, a reference) is malformed or is not what was announced. Final:
   * fetching it again gives the same bytes, so the caller refuses it rather than retrying.
   */
  'BAD_PEER_DATA',
  /** Not possible yet or any more (not registered, stopping); trying again later may work. */
  'UNAVAILABLE',
  /**
   * The member cannot store more right now: its disk is full, or its database is at its ceiling. Nothing of the
   * refused request was kept; reads and the processing of what peers send go on, and the condition shows in /status.
   */
  'STORAGE_FULL',
  /** Too much is in flight at once (request bodies being read, say); the same request later may succeed. */
  'TOO_MANY_REQUESTS',
  /** A request body that did not arrive whole in the time the member gives one. */
  'REQUEST_TIMEOUT',
  'INTERNAL',
] as const

export type ErrorCode = (typeof ERROR_CODES)[number]

export class ParleyError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = 'ParleyError'

  constructor(
    readonly code: C,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }

  toJSON(): { error: string } {
    return { error: `${this.code}: ${this.message}` }
  }
}

/** Whether `e` is a ParleyError, of `code` when one is given: the way to branch on a failure. */
export function isParleyError<C extends ErrorCode>(e: unknown, code?: C): e is ParleyError<C> {
  return e instanceof ParleyError && (code === undefined || e.code === code)
}

/**
 * An error of a seam whose server is gone for now and comes back by itself (a PostgreSQL database: the db's
 * DB_UNAVAILABLE), which the API answers 503 UNAVAILABLE; marked so that the API needs no import of the seam.
 */
export interface TemporarilyUnavailable {
  readonly temporarilyUnavailable: true
}

export function isTemporarilyUnavailable(e: unknown): e is Error & TemporarilyUnavailable {
  return e instanceof Error && (e as Partial<TemporarilyUnavailable>).temporarilyUnavailable === true
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
