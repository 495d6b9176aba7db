/**
 * The one closed set of error codes a node answers with, each with its HTTP status.
 * Route handlers and capabilities throw `ParleyError`; the API maps it to `{"error": "<CODE>: <message>"}`.
 */
export const ErrorCodes = {
  BAD_REQUEST: 400,
  INVALID_ID: 400,
  INVALID_JSON: 400,
  INVALID_FIELD: 400,
  INVALID_FILTER: 400,
  SCHEMA_VALIDATION_FAILED: 400,
  UNKNOWN_DATATYPE: 400,
  UNKNOWN_IDENTITY: 400,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  CONFIRM_TIMEOUT: 408,
  UNAVAILABLE: 503,
  INTERNAL: 500,
} as const

export type ErrorCode = keyof typeof ErrorCodes

export class ParleyError extends Error {
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message)
    this.name = 'ParleyError'
    this.status = ErrorCodes[code]
  }

  toJSON(): { error: string } {
    return { error: `${this.code}: ${this.message}` }
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
