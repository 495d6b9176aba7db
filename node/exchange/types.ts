/**
 * The exchange seam: how a member node hands private batches and blobs to other members' nodes, and receives
 * theirs, over HTTPS with mutual TLS (FireFly's data exchange, without its separate process). Small on purpose:
 * private messaging sees peers, a payload and a byte stream, never sockets, certificates or retries; a test can
 * run two real exchanges on loopback.
 *
 * Errors, for every method: a ParleyError with one of two codes, chosen by whether trying again can help.
 * - `UNAVAILABLE`: it may work later. The peer is unreachable, refuses the TLS handshake, times out, answers 5xx,
 *   answers 401 (it has not yet seen our node identity: registrations travel through the chain and peers learn
 *   of them at different times), 408, 429 or anything neither 2xx nor 4xx; or this exchange is stopping. The caller keeps the work (it is in
 *   the database) and sends again later.
 * - `BAD_REQUEST`: final for this payload. The peer refused it (any other 4xx, its error text in the message), or
 *   it cannot be sent at all (`to.endpoint` is not an https URL, `to.cert` is not a certificate, a blob's hash or
 *   size is malformed, its content runs past the announced size: the upload stops there). Sending the same
 *   bytes again gets the same answer, so the caller marks the operation failed and logs it.
 * A server presenting a certificate other than the peer's registered one is refused by the client, as
 * `UNAVAILABLE`: the fault is in the connection, not in the payload, and it is what a peer that rotated its
 * certificate looks like until its new registration arrives through the chain (and an impostor at the address
 * never gets the payload either way). The pin is exact: the server's certificate must chain to `to.cert` (TLS, with
 * `ca: [to.cert]`) and be that very certificate (`checkServerIdentity` compares fingerprints; host names are not
 * checked, the pin is stronger). TLS sessions are not resumed, so every connection is checked so.
 *
 * The wire (the p2p endpoint, HTTPS with mutual TLS; every error answer is `{"error": "<CODE>: <message>"}`):
 * - `HEAD|GET /api/v1/ping` → 204 (what the endpoint has always answered).
 * - `POST /api/v1/batches`, `content-type: application/json`, the batch payload as FireFly's `core.Batch` JSON
 *   (node/batch/payload.ts serializeBatch / parseBatch). The sender adds `Expect: 100-continue` over 64 KiB.
 * - `PUT /api/v1/blobs/{sha256}`, header `parley-blob-size: <bytes>`, the bytes as a chunked body (not a
 *   content-length: the receiver must see a longer body to cut it off), always under `Expect: 100-continue` so a
 *   refusal from the headers costs no upload.
 * Answers: 204 stored durably (the handler resolved); 400 `BAD_PEER_DATA` (malformed batch or not UTF-8, bad hash in
 * the path or size header, blob longer, shorter or other than announced, or the handler's own BAD_PEER_DATA); 401
 * `UNAUTHORIZED` (no client certificate, or not exactly a trusted peer's: the handshake completes for any certificate
 * whose key the client holds, so that the refusal is answered and logged); 404 `NOT_FOUND`; 405
 * `METHOD_NOT_ALLOWED`; 413 `PAYLOAD_TOO_LARGE` (a batch over `maxBatchBytes`, refused from its content-length before
 * reading, or cut off when it passes the limit); 415 `UNSUPPORTED_MEDIA_TYPE` (a batch not sent as JSON); 429
 * `TOO_MANY_REQUESTS` (a quota: the peer's org already has its share of requests or batch bytes in flight here,
 * or the connection is over a connection cap); 500 `INTERNAL` (the handler failed otherwise, or resolved without
 * reading a blob through); 503 `UNAVAILABLE` (the handler said so, or this exchange is stopping); 507
 * `STORAGE_FULL` (the handler's: the org is over its share of stored blobs no message refers to). Every quota's
 * refusal names it (`quotas.<name>`). A refusal answered before the body was read closes the connection. A blob's
 * `100 Continue` is sent only once its handler starts reading it, so a blob refused from its announcement costs no
 * upload.
 *
 * Limits and time: incoming, per peer org (over all its nodes), the in-flight quotas of `ExchangeQuotas`; a socket with
 * no traffic for `idleTimeoutMs` (30 s) is dropped on either side (connecting, sending, waiting for the answer: a
 * handler that takes longer than that after the body ended loses its answer and the sender tries again); a batch has
 * two minutes in all, its body included; a blob has no overall limit, only the idle one; TLS handshakes 10 s,
 * request headers 30 s. Outgoing, at most 8 connections per peer for batches and 8 more for blobs (separate pools,
 * so a batch never queues behind blob uploads). Retries inside a send: `DEFAULT_RETRY`, 7 attempts with waits of
 * 0.5, 1, 2, 4, 8 and 16 s (31.5 s of waiting, plus the attempts' own time); a kept-alive connection found closed is
 * retried once at once. A stalled peer therefore costs at most 7 × 30 s + 31.5 s before `UNAVAILABLE`.
 */
import type { Hash } from '../core/ids.js'
import { MAX_BATCH_PAYLOAD_BYTES, type BatchPayload } from '../model/index.js'

/** How long a socket may see no traffic, either side, before it is dropped. */
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000
/**
 * The quotas the exchange applies to its peers. A member configures them under `quotas` (node/config.ts, where each
 * is described, with the same defaults).
 */
export interface ExchangeQuotas {
  inFlightRequestsPerOrg: number
  inFlightBatchBytesPerOrg: number
  connectionsPerCertificate: number
  connectionsPerOrg: number
  unregisteredConnections: number
  connections: number
  unidentifiedConnectionsPerAddress: number
  refusalLinesPerMinute: number
}

export const DEFAULT_EXCHANGE_QUOTAS: Readonly<ExchangeQuotas> = {
  inFlightRequestsPerOrg: 32,
  inFlightBatchBytesPerOrg: 2 * MAX_BATCH_PAYLOAD_BYTES,
  connectionsPerCertificate: 32,
  connectionsPerOrg: 64,
  unregisteredConnections: 32,
  connections: 1024,
  unidentifiedConnectionsPerAddress: 16,
  refusalLinesPerMinute: 20,
}
/** Outgoing connections per peer, for batches and again for blobs. */
export const MAX_SOCKETS_PER_PEER = 8
/** A batch attempt's ceiling at the sender (connect, body, answer); at the receiver, the time its body may take. */
export const BATCH_TIME_LIMIT_MS = 120_000

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
 * Asked before a batch's body is read: throws (a ParleyError answered as a handler's rejection is) when the peer has
 * no room for any batch, so that a refusal the handler would make anyway costs no read, parse or hash.
 */
export type BatchAdmission = (from: Peer) => void

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
  onBatch(handler: BatchHandler, admit?: BatchAdmission): void
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
  /**
   * How a batch payload is written and read: node/batch/payload.ts `serializeBatch` and `parseBatch` (a parse
   * failure is a ParleyError `BAD_PEER_DATA`). Passed in because a seam imports only core and model.
   */
  codec: BatchCodec
  /** The largest batch body accepted; a larger one is refused 413 (`PAYLOAD_TOO_LARGE`) before it is parsed. */
  maxBatchBytes?: number
  /** Retries inside `sendBatch` and `sendBlob`; `DEFAULT_RETRY` (retry.ts) for what is not given. */
  retry?: Partial<RetryPolicy>
  /** See `DEFAULT_IDLE_TIMEOUT_MS`. */
  idleTimeoutMs?: number
  /** `DEFAULT_EXCHANGE_QUOTAS` for what is not given. */
  quotas?: Partial<ExchangeQuotas>
  /**
   * Called before a connection is taken and before each request is served, so that a caller that keeps the peers
   * up to date lazily calls `trust` then with what changed (node/startup/plugins.ts).
   */
  beforeUse?: () => void
}

export interface BatchCodec {
  serialize(payload: BatchPayload): string
  parse(text: string): BatchPayload
}

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number
  /** The wait after the first failure; each next one doubles, up to `maxWaitMs`. */
  firstWaitMs: number
  maxWaitMs: number
}
