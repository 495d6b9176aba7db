/**
 * Errors of the local IPFS, classified once so that each front (the Kubo RPC API, the gateway) can map them to
 * its own status codes: the RPC API answers like Kubo, the gateway like an HTTP file server.
 */
export type IpfsErrorKind =
  /** The caller sent something unusable: a malformed CID, a bad option value, a broken multipart body. */
  | 'bad-request'
  /** A valid request for something this IPFS does not do (another hash function, the trickle layout...). */
  | 'unsupported'
  /** A block or a path inside a directory is not in the local store (and there is no network to ask). */
  | 'not-found'
  /** The path names a directory (or another non-file node) where a file is needed. */
  | 'not-a-file'

export class IpfsError extends Error {
  constructor(
    readonly kind: IpfsErrorKind,
    message: string,
  ) {
    super(message)
    this.name = 'IpfsError'
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** A socket error that only says the client went away mid-answer: worth no log line of its own. */
export function isClientGone(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code
  return code === 'ECONNRESET' || code === 'EPIPE' || code === 'ERR_STREAM_PREMATURE_CLOSE'
}

/** Kubo's error body: `Code` 1 is go-ipfs-cmds' ErrClient (answered with 400), 0 is ErrNormal (answered with 500). */
export interface KuboErrorBody {
  Message: string
  Code: 0 | 1
  Type: 'error'
}

export function kuboError(err: unknown): { status: number; body: KuboErrorBody } {
  if (err instanceof IpfsError && (err.kind === 'bad-request' || err.kind === 'unsupported')) {
    return { status: 400, body: { Message: err.message, Code: 1, Type: 'error' } }
  }
  return { status: 500, body: { Message: errorMessage(err), Code: 0, Type: 'error' } }
}
