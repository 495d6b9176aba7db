/**
 * The exchange seam: how a member node hands private batches and blobs to other members' nodes, and receives
 * theirs, over HTTPS with mutual TLS (FireFly's data exchange, without its separate process). Small on purpose:
 * private messaging sees peers, a payload and a byte stream, never sockets, certificates or retries; a test can
 * run two real exchanges on loopback.
 *
 * Errors, for every method: a ParleyError with one of two codes, chosen by whether trying again can help.
 * - `UNAVAILABLE`: it may work later. The peer is unreachable, refuses the TLS handshake, times out, answers 5xx,
 *   answers 401 (it has not yet seen our node identity: registrations travel through the chain and peers learn
 *   of them at different times), 408 or 429; or this exchange is stopping. The caller keeps the work (it is in
 *   the database) and sends again later.
 * - `BAD_REQUEST`: final for this payload. The peer refused it (any other 4xx, its error text in the message), or
 *   it cannot be sent at all (`to.endpoint` is not an https URL, `to.cert` is not a certificate). Sending the same
 *   bytes again gets the same answer, so the caller marks the operation failed and logs it.
 */
import type { Hash } from '../core/ids.js'
import type { BatchPayload } from '../model/index.js'

/** Another member's node as its registered node identity describes it. */
export interface Peer {
  /** The node identity's DID (`did:firefly:node/<name>`): what groups and batches name. */
  node: string
  /** The org that owns the node (its name, as in the certificate's subject O). */
  org: string
  /** Its p2p endpoint, an https URL. */
  endpoint: string
  /**
   * Its certificate (PEM), self-signed. Outgoing connections accept only a server presenting exactly this
   * certificate; incoming ones are attributed to this peer only when the client presents exactly it.
   */
  cert: string
}

/** A blob as announced: the receiver checks the bytes against both. */
export interface BlobRef {
  /** sha256 of the content. */
  hash: Hash
  /** Its length in bytes. */
  size: number
}

/**
 * Stores a batch a peer sent, resolving once it is durable: the exchange then answers the peer 204, so the sender
 * knows the batch is safe. `from` is authentic (its certificate); whether the payload is consistent with it
 * (author is an identity of `from.org`, the manifest hash verifies, the group includes `from.org`) is the
 * handler's check. Delivery is at least once: an acknowledgement lost in transit or a resend after a restart
 * brings the same batch again, and storing an identical batch again must resolve, not refuse.
 *
 * A body that is not JSON of a batch payload's shape never reaches the handler: the exchange refuses it 400 with
 * `BAD_PEER_DATA` and logs it.
 *
 * Rejecting refuses the batch; the peer is answered `{"error": "<CODE>: <message>"}` (the API's error shape):
 * - ParleyError `BAD_PEER_DATA` (does not verify, forged, contradicts a stored batch of the same id): 400, final;
 * - ParleyError `UNAVAILABLE` (database closing): 503, the peer tries again later;
 * - anything else: 500 with `INTERNAL` and the error's message only (never a stack), which the peer also retries.
 * Every refusal is logged in one line naming the peer, the batch id and the reason. A rejection never reaches
 * the process: a peer's bad input cannot stop the node.
 */
export type BatchHandler = (from: Peer, payload: BatchPayload) => Promise<void>

/**
 * Stores a blob a peer sent. `content` is the request body, streamed: read it through once, hashing as it is
 * written, never into one buffer. The exchange counts and hashes the bytes too: a body longer than `blob.size`
 * is cut off and refused before it ends, and one whose length or hash differs at the end makes the iteration
 * throw ParleyError `BAD_PEER_DATA` (so the handler must discard what it wrote before that throw). Resolve once
 * the blob is durable; rejection is answered and logged exactly as for a batch. At least once, as for batches.
 */
export type BlobHandler = (from: Peer, blob: BlobRef, content: AsyncIterable<Uint8Array>) => Promise<void>

export interface Exchange {
  /**
   * Sets who receives incoming batches. Must be called before `start()`; calling it after throws ParleyError
   * `INTERNAL` (a wiring mistake), as does `start()` without both handlers: fail loudly at startup rather than
   * refuse a peer's batch at run time.
   */
  onBatch(handler: BatchHandler): void
  /** Sets who receives incoming blobs; the same rules as `onBatch`. */
  onBlob(handler: BlobHandler): void
  /**
   * Listens on the p2p endpoint. Rejects only for what waiting cannot fix: the port is taken (EADDRINUSE, the
   * port named), the TLS material is unusable, or a handler is missing. Peers that are down are not its concern:
   * they matter only when something is sent to them.
   */
  start(): Promise<void>
  /**
   * Replaces the peers that may connect (the member nodes registered on the chain; call again as identities are
   * confirmed). A sender is identified only by its client certificate, and only by exact match: a request is
   * attributed to the peer whose `cert` is the very certificate presented, never to an org read from a subject
   * or from the body. TLS alone is not enough: each member's self-signed certificate is a CA, so TLS also admits
   * any certificate a member signs, with whatever subject it likes. A certificate matching no peer is answered
   * 401 and logged. Connections open under the old
   * set finish their current request. Never throws for the peers of a chain: a peer with an unparsable
   * certificate is left out and logged once.
   */
  trust(peers: readonly Peer[]): void
  /**
   * Sends a batch to one peer and resolves once the peer has stored it durably (its 204). Transient failures are
   * retried with backoff (a few attempts over tens of seconds) inside the call; then it rejects `UNAVAILABLE`.
   * A refusal rejects `BAD_REQUEST` at once. See the header for the exact split. Sends to different peers, and
   * separate sends to one peer, are independent: no delivery order is promised, because order comes from the
   * pins on the chain and the receiver waits for whatever its pins name.
   */
  sendBatch(to: Peer, payload: BatchPayload): Promise<void>
  /**
   * Streams a blob to one peer, never holding it whole in memory, and resolves once the peer has verified its
   * hash and size and stored it durably. Retries and errors as `sendBatch`, with one exception: an error thrown
   * by `content` itself (the local store failed to read) aborts the upload and is rethrown unchanged, because it
   * is the caller's own failure, not the peer's. Each attempt iterates `content` from the start, so it must be
   * re-iterable (a fresh read of the store per `[Symbol.asyncIterator]()` call), not a one-shot stream.
   */
  sendBlob(to: Peer, blob: BlobRef, content: AsyncIterable<Uint8Array>): Promise<void>
  /**
   * Stops accepting new work: sends not yet under way, and retries waiting out their backoff, reject
   * `UNAVAILABLE`; requests in flight (ours and peers' to us, handlers included) are let finish or time out, then
   * the endpoint closes. Never rejects. After it, every send rejects `UNAVAILABLE`.
   */
  stop(): Promise<void>
}

export interface ExchangeOptions {
  host: string
  port: number
  /** This node's certificate and key (PEM): served to peers that connect and presented when connecting to them. */
  cert: string
  key: string
  log: (line: string) => void
  /** The largest batch body accepted; a larger one is refused 413 (`PAYLOAD_TOO_LARGE`) before it is parsed. */
  maxBatchBytes?: number
}
